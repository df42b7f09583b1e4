// Package internal holds code shared by tablekit's packages that no user
// should import.
package internal
