// Package examples holds one runnable program per Azure Table storage design
// pattern, and examples/tour, which runs them all against Azurite or the
// account in AZURE_STORAGE_CONNECTION_STRING.
package examples
