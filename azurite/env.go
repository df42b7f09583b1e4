package azurite

import (
	"context"
	"os"
)

// ConnectionStringEnv is the environment variable that names the storage
// account a program uses, as the Azure SDKs and tools read it.
const ConnectionStringEnv = "AZURE_STORAGE_CONNECTION_STRING"

// EnvOrStart returns the connection string of the account a program
// should use: the one in AZURE_STORAGE_CONNECTION_STRING when that is set
// (stop then does nothing), else that of an Azurite it starts with opts
// (stop stops it). tablekit's examples start this way, so that each runs
// unchanged against a real account or, with nothing set up, a local
// emulator. ctx bounds the start, as for [Start].
func EnvOrStart(ctx context.Context, opts *Options) (connectionString string, stop func() error, err error) {
	if cs := os.Getenv(ConnectionStringEnv); cs != "" {
		return cs, func() error { return nil }, nil
	}
	srv, err := Start(ctx, opts)
	if err != nil {
		return "", nil, err
	}
	return srv.ConnectionString(), srv.Stop, nil
}
