package azurite

import "github.com/tablekit/tablekit/internal/azuritehook"

func init() {
	azuritehook.SortCosmosWithinPartition = func(opts any) {
		opts.(*FrontOptions).sortWithinPartition = true
	}
}
