package azurite

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseFrontSpec turns a short text, as kept in an environment variable,
// into FrontOptions. It is a comma-separated list of:
//
//	strict          Azure's entity and batch limits, SAS ranges and paging (= limits,sas,paging)
//	limits          Azure's entity and batch limits
//	sas             SAS PartitionKey/RowKey ranges
//	paging          Azure's paging: short and empty pages (seed 0); paging=7 with seed 7
//	throttle        Azure's scalability targets (2,000 entities/s per partition, 20,000 requests/s)
//	throttle=0.05   the targets scaled (here 100 entities/s and 1,000 requests/s)
//	latency=20ms    a delay before every request
//	cosmos          Cosmos DB for Table mode (seed 0); cosmos=7 with seed 7
//
// What the list does not name is off. "" and "off" return nil (no front).
// Paging and Cosmos mode share [FrontOptions.Seed]: "cosmos=7,paging=7"
// (or "cosmos=7,paging") is fine, two different seeds are refused.
func ParseFrontSpec(spec string) (_ *FrontOptions, err error) {
	defer func() { err = opErr("ParseFrontSpec", err) }()
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "off" {
		return nil, nil
	}
	o := &FrontOptions{NoLimits: true, NoSASRanges: true}
	seeded := false
	for _, item := range strings.Split(spec, ",") {
		name, arg, hasArg := strings.Cut(strings.TrimSpace(item), "=")
		bad := func(err error) error {
			return fmt.Errorf("azurite: front spec %q: %q: %w", spec, item, err)
		}
		noArg := func() error {
			if hasArg {
				return bad(fmt.Errorf("takes no value"))
			}
			return nil
		}
		switch name {
		case "strict":
			if err := noArg(); err != nil {
				return nil, err
			}
			o.NoLimits, o.NoSASRanges, o.Paging = false, false, true
		case "paging", "cosmos":
			if name == "paging" {
				o.Paging = true
			} else {
				o.Cosmos = true
			}
			if hasArg {
				seed, err := strconv.ParseUint(arg, 10, 64)
				if err != nil {
					return nil, bad(fmt.Errorf("the seed must be a whole number"))
				}
				if seeded && seed != o.Seed {
					return nil, bad(fmt.Errorf("paging and cosmos share one seed, and %d was given before", o.Seed))
				}
				o.Seed, seeded = seed, true
			}
		case "limits":
			if err := noArg(); err != nil {
				return nil, err
			}
			o.NoLimits = false
		case "sas":
			if err := noArg(); err != nil {
				return nil, err
			}
			o.NoSASRanges = false
		case "throttle":
			o.Throttle = &ThrottleOptions{}
			if hasArg {
				scale, err := strconv.ParseFloat(arg, 64)
				if err != nil || scale <= 0 {
					return nil, bad(fmt.Errorf("the scale must be a positive number"))
				}
				o.Throttle.PartitionRate = AzurePartitionRate * scale
				o.Throttle.AccountRate = AzureAccountRate * scale
			}
		case "latency":
			d, err := time.ParseDuration(arg)
			if err != nil || d < 0 {
				return nil, bad(fmt.Errorf("want a duration such as 20ms"))
			}
			o.Latency = d
		default:
			return nil, bad(fmt.Errorf("unknown; want strict, limits, sas, paging[=seed], throttle[=scale], latency=DURATION or cosmos[=seed]"))
		}
	}
	return o, nil
}
