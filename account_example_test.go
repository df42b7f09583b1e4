package tablekit_test

import (
	"context"
	"fmt"
	"os"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/tablekit/tablekit"
)

// Signing in with Microsoft Entra ID instead of an account key: azidentity's
// DefaultAzureCredential finds the credential of the environment (a
// managed identity, a workload identity, `az login`, ...). The identity
// needs the Storage Table, Queue and Blob Data Contributor roles on the
// account. (Not run here: it needs an Azure account.)
func ExampleOpenWithCredential() {
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	acct, err := tablekit.OpenWithCredential(os.Getenv("AZURE_STORAGE_ACCOUNT"), cred, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, "Employees", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	n, err := tbl.Count(context.Background(), tablekit.PartitionEq("Sales"))
	fmt.Println(n, err)
}
