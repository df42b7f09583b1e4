package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/tablekit/tablekit/cmd/tablekit/internal/conformance"
)

// errDiffers marks a conformance run that found behaviours that differ
// from the live service's.
var errDiffers = errors.New("the endpoint differs from the live service")

func runConformance(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "conformance", "[--connection-string CS | --sas-url URL] [--cosmos]")
	var connection, sasURL string
	var cosmos bool
	fs.StringVar(&connection, "connection-string", "", "connection string of the account to probe (default $AZURE_STORAGE_CONNECTION_STRING)")
	fs.StringVar(&sasURL, "sas-url", "", "account SAS URL (https://ACCOUNT.table.core.windows.net/?sv=...) allowed to create and delete tables and entities, instead of a connection string")
	fs.BoolVar(&cosmos, "cosmos", false, "probe the endpoint as Azure Cosmos DB for Table (found from the endpoint's host otherwise)")
	if err := parse(fs, args); err != nil {
		return err
	}
	endpoint := connection
	switch {
	case sasURL != "" && connection != "":
		return usagef("--sas-url and --connection-string exclude each other")
	case sasURL != "":
		endpoint = sasURL
	case endpoint == "":
		endpoint = e.getenv("AZURE_STORAGE_CONNECTION_STRING")
	}
	if endpoint == "" {
		return usagef("no account: set AZURE_STORAGE_CONNECTION_STRING, or give --connection-string or --sas-url")
	}
	fmt.Fprintf(e.stdout, "tablekit conformance: %s (at most %d storage transactions)\n", describeEndpoint(endpoint), conformance.Bound())
	rep, err := conformance.Run(ctx, endpoint, &conformance.Options{
		Cosmos:   cosmos,
		OnResult: func(r conformance.Result) { fmt.Fprintln(e.stdout, r) },
	})
	if rep != nil && rep.Table != "" {
		left := "deleted"
		if !rep.Deleted {
			left = "NOT deleted: delete it by hand"
		}
		fmt.Fprintf(e.stdout, "cost: %d transactions (at most %d); probed as %s; table %s %s\n", rep.Requests, rep.Bound, rep.Service, rep.Table, left)
	}
	if err != nil && rep == nil {
		flag := "--connection-string"
		if sasURL != "" {
			flag = "--sas-url"
		}
		return usagef("%s: %v", flag, err) // no report: the endpoint cannot be right, and nothing was sent
	}
	if err != nil {
		return err
	}
	n := 0
	for _, r := range rep.Results {
		if r.Outcome == conformance.Differs {
			n++
		}
	}
	if n > 0 {
		return fmt.Errorf("%w in %d of %d behaviours", errDiffers, n, len(rep.Results))
	}
	return nil
}

// describeEndpoint names the table endpoint of a connection string or SAS
// URL without its secrets.
func describeEndpoint(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil && (u.Scheme == "https" || u.Scheme == "http") {
		return u.Scheme + "://" + u.Host + u.Path
	}
	var account, table, suffix string
	for _, kv := range strings.Split(endpoint, ";") {
		k, v, _ := strings.Cut(kv, "=")
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "tableendpoint":
			table = v
		case "accountname":
			account = v
		case "endpointsuffix":
			suffix = v
		case "usedevelopmentstorage":
			return "the local emulator (UseDevelopmentStorage=true)"
		}
	}
	switch {
	case table != "":
		return table
	case account != "":
		if suffix == "" {
			suffix = "core.windows.net"
		}
		return "https://" + account + ".table." + suffix
	}
	return "the account of the connection string"
}
