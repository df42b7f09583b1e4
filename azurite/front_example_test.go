package azurite_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/azurite"
)

// An Azurite behind the strict front refuses what Azure refuses.
func ExampleNewFront() {
	ctx := context.Background()
	srv, err := azurite.Start(ctx, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Stop()
	front, err := azurite.NewFront(ctx, srv.Direct(), &azurite.FrontOptions{
		// Azure's targets scaled down to what a laptop reaches:
		// 100 entities/s per partition, 1,000 requests/s.
		Throttle: &azurite.ThrottleOptions{
			PartitionRate: azurite.AzurePartitionRate * 0.05,
			AccountRate:   azurite.AzureAccountRate * 0.05,
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer front.Close()

	svc, err := aztables.NewServiceClientFromConnectionString(front.ConnectionString(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := svc.CreateTable(ctx, "Orders", nil); err != nil {
		fmt.Println(err)
		return
	}
	_, err = svc.NewClient("Orders").AddEntity(ctx, []byte(`{"PartitionKey":"a/b","RowKey":"1"}`), nil)
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		fmt.Println(re.StatusCode, re.ErrorCode)
	}
	// Output: 400 OutOfRangeInput
}
