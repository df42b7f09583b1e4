package azurite

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// Azure Storage's scalability targets ("Scalability and performance
// targets for Table storage" and "for standard storage accounts").
const (
	// AzurePartitionRate is the target throughput of one table partition:
	// 2,000 entities per second (1 KiB entities).
	AzurePartitionRate = 2000
	// AzureAccountRate is the maximum request rate of a storage account:
	// 20,000 requests per second.
	AzureAccountRate = 20000
)

// ThrottleOptions sets the token buckets of a [Front]. Every request takes
// one token from the account's bucket; a table request on one partition
// (a point read, insert, update, merge, upsert or delete) also takes one
// from its partition's bucket, and a batch of n actions takes n from its
// partition's and one from the account's. A request that finds a bucket
// short is answered 503 ServerBusy (Azure's code and message) and takes
// nothing. Queries take from the account's bucket only.
//
// The zero value applies Azure's figures, which a laptop rarely reaches:
// set the rates (e.g. AzurePartitionRate * 0.05 and AzureAccountRate *
// 0.05: 100 entities/s per partition, 1,000 requests/s) so that a 2-core
// machine meets the limits.
type ThrottleOptions struct {
	// PartitionRate is the entities per second of one table partition.
	// 0 means [AzurePartitionRate]; a negative rate means no partition
	// limit.
	PartitionRate float64

	// AccountRate is the requests per second of the account (all
	// services). 0 means [AzureAccountRate]; a negative rate means no
	// account limit.
	AccountRate float64

	// Burst is how much of its rate a full bucket holds: Burst ×
	// rate tokens (at least one). 0 means one second. A request that
	// needs more than a full bucket holds is let through when the bucket
	// is full, leaving it in debt.
	Burst time.Duration

	// clock, if not nil, is the time the buckets refill by (for tests).
	clock func() time.Time
}

func (o *ThrottleOptions) validate() error {
	for _, v := range []struct {
		name string
		x    float64
	}{{"PartitionRate", o.PartitionRate}, {"AccountRate", o.AccountRate}} {
		if math.IsNaN(v.x) || math.IsInf(v.x, 0) {
			return fmt.Errorf("azurite: ThrottleOptions.%s is %v", v.name, v.x)
		}
	}
	if o.Burst < 0 {
		return fmt.Errorf("azurite: ThrottleOptions.Burst is negative (%v)", o.Burst)
	}
	return nil
}

// rates returns the partition and account rates these options give (a
// negative rate means no limit).
func (o *ThrottleOptions) rates() (partition, account float64) {
	partition, account = o.PartitionRate, o.AccountRate
	if partition == 0 {
		partition = AzurePartitionRate
	}
	if account == 0 {
		account = AzureAccountRate
	}
	return partition, account
}

// bucket is one token bucket.
type bucket struct {
	tokens float64
	last   time.Time
}

// refill adds the tokens earned since the last refill, up to capacity.
func (b *bucket) refill(now time.Time, rate, capacity float64) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = math.Min(capacity, b.tokens+rate*d.Seconds())
	}
	b.last = now
}

// can reports whether n tokens may be taken: the bucket has them, or it
// is full (a request larger than the bucket then leaves it in debt).
func (b *bucket) can(n, capacity float64) bool {
	return b.tokens >= n || b.tokens >= capacity
}

// throttleResult says which bucket refused a request.
type throttleResult int

const (
	throttleOK throttleResult = iota
	throttleAccount
	throttlePartition
)

// throttle is the front's set of token buckets.
type throttle struct {
	mu                 sync.Mutex
	now                func() time.Time
	partRate, acctRate float64
	partCap, acctCap   float64
	account            bucket
	partitions         map[string]*bucket
	sweepAt            int
}

// maxIdleBuckets is how many partition buckets the throttle keeps before
// it drops the full ones.
const maxIdleBuckets = 1 << 14

func newThrottle(o *ThrottleOptions) *throttle {
	t := &throttle{now: o.clock, partitions: map[string]*bucket{}, sweepAt: maxIdleBuckets}
	if t.now == nil {
		t.now = time.Now
	}
	t.partRate, t.acctRate = o.rates()
	burst := o.Burst
	if burst == 0 {
		burst = time.Second
	}
	t.partCap = math.Max(1, t.partRate*burst.Seconds())
	t.acctCap = math.Max(1, t.acctRate*burst.Seconds())
	t.account = bucket{tokens: t.acctCap, last: t.now()}
	return t
}

// take takes one token from the account and n from partition (when not
// "" and n > 0), all or nothing.
func (t *throttle) take(partition string, n int) throttleResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	var pb *bucket
	if partition != "" && n > 0 && t.partRate > 0 {
		pb = t.partitions[partition]
		if pb == nil {
			if len(t.partitions) >= t.sweepAt {
				t.sweep(now)
			}
			pb = &bucket{tokens: t.partCap, last: now}
			t.partitions[partition] = pb
		}
		pb.refill(now, t.partRate, t.partCap)
	}
	if t.acctRate > 0 {
		t.account.refill(now, t.acctRate, t.acctCap)
		if !t.account.can(1, t.acctCap) {
			return throttleAccount
		}
	}
	if pb != nil && !pb.can(float64(n), t.partCap) {
		return throttlePartition
	}
	if t.acctRate > 0 {
		t.account.tokens--
	}
	if pb != nil {
		pb.tokens -= float64(n)
	}
	return throttleOK
}

// sweep drops the partition buckets that have refilled completely (they
// are the same as new ones).
func (t *throttle) sweep(now time.Time) {
	for k, b := range t.partitions {
		b.refill(now, t.partRate, t.partCap)
		if b.tokens >= t.partCap {
			delete(t.partitions, k)
		}
	}
	t.sweepAt = max(maxIdleBuckets, 2*len(t.partitions))
}
