// Package chaos is the fault-injection and history/invariant harness of
// tablekit's chaos tests. Tests use it; library code never does (the root
// package must not import it).
//
// # Injecting faults
//
// An [Injector] holds a seed and a [Config]; its [Injector.Policy] is an
// azcore policy installed in tablekit.Options.ClientOptions.PerRetryPolicies, so it runs
// on every try, after the SDK's retry policy and before the Account's
// Meter. [Injector.Account] (tests) and [Injector.Open] do the installing:
//
//	inj, err := chaos.New(seed, chaos.Mixed(0.2)) // 20% of tries fail, some more are delayed
//	acct := inj.Account(t, nil)                    // tablekit.Account with faults, fast SDK retries
//
// The faults ([Kind]) are: [Reset] (a transport error before sending;
// nothing reaches the service), [AnswerLost] (the service applies the try,
// its answer is drained and replaced by a transport error), [ServerBusy]
// (503 ServerBusy before sending), [TimeoutBefore] and [TimeoutAfter] (500
// OperationTimedOut before sending, or after the service applied the try)
// and [Delay] (a sleep before sending that honours the request's context).
// The 503 and 500 answers are what Azure sends: the status, the
// x-ms-error-code header, and the body (OData JSON
// {"odata.error":{"code":...,"message":{"lang":"en-US","value":...}}} for
// tables, <Error><Code>..</Code><Message>..</Message></Error> for queues
// and blobs), so the SDK and tablekit see them as they would see Azure's.
//
// [Config.Services] and [Config.Operations] limit faults to some services
// and operations (named as tablekit's Meter names them: "Transaction",
// "InsertEntity", "GetMessages", "PutBlockList", ...). [Config.MaxConsecutive]
// (default 2) lets a request through after that many failing faults in a
// row, so the SDK's 3 retries always get a try to the service and a run at
// 15-30% faulted tries still makes progress; [Config.MaxFaults] caps the
// total. [Injector.SetEnabled] and [NoFaults] turn faults off for setup
// and for reading the final state.
//
// [Injector.Stats] counts tries, eligible tries and faults by kind,
// service and operation (its String method prints them, for test logs and
// RELIABILITY.md); [Injector.Events] lists every fault injected.
//
// # Seeds and replay
//
// Concurrency reorders requests, so faults are not drawn from one shared
// random stream. The fault of a try is a function of the seed, the
// request's identity and how many tries of that identity came before it.
// The identity is the method, the path below the account with the table,
// queue or container name and a queue message's id replaced by "_" (tests
// give those random names; the service gives message ids), the query
// without the pop receipt, and a SHA-256 of the body (for a transaction,
// with the entity URLs and the random multipart boundaries made the same
// way). A request's retries share its identity.
//
// What a seed replays: every request whose identity and count of earlier
// tries are the same in both runs gets the same fault (and the same delay),
// however the goroutines interleave. So a seed replays the faults of a run
// whose requests are determined by the seed: draw keys, values and choices
// from [Writer.Rand], and give each key to one writer.
//
// What it does not: (1) identical requests sent at once by several
// goroutines share an identity, and which of them gets the n-th fault
// depends on scheduling; (2) a request that carries something random or
// time-dependent in its URL or body (a UUID, a timestamp, a random block
// id, a message text with a random id, an ETag the service chose that is
// sent in the body) has a new identity in each run, so it gets new faults;
// (3) [Config.MaxFaults] depends on the order of all faults; (4) the
// service's answers depend on timing (a retry may meet another writer's
// change), so the same faults can lead to a different history. A replay
// is therefore a strong hint, not a proof: run a failing seed a few times.
//
// [Seeds] returns the seeds a test runs: 1, 2 and 3 by default (CI),
// TABLEKIT_CHAOS_SEEDS=20 runs seeds 1..20 (or a list, "7,42"), and
// TABLEKIT_CHAOS_SEED=12345 replays one. TABLEKIT_CHAOS_FULL=1 makes
// [Size] return the full size. [Run] runs a subtest per seed, logs the
// seed, and logs the exact command that replays it when it fails:
//
//	TABLEKIT_CHAOS_SEED=2 go test -race -run '^TestChaosBulk$/^seed=2$' ./
//
// [RunVariant] runs a costlier variant of a suite (the same body behind
// package azurite's Cosmos DB front, say) on seed 1 alone in CI, and on
// the seeds the variables name otherwise.
//
// # Histories and invariants
//
// [RunWriters] runs n concurrent writers, each a [Writer] with its own
// index, seed and random source, and returns the [History] of their ops.
// [Writer.Do] runs one operation and records it with its [Outcome]: [OK]
// (acknowledged), [Failed] (the service or tablekit said it did not
// happen) or [Unknown] (answer lost, context ended, 500 OperationTimedOut,
// or tablekit said it cannot tell), as [OutcomeOf] classifies the error,
// plus the faults injected into its requests. [Reachable] computes the
// states the stored state may be in: the in-order application of the
// acknowledged ops, plus any subset of the unknown ones. [Violations]
// collects what a check finds and reports it readably.
//
// # Processes killed mid-work
//
// A suite that kills a process with SIGKILL runs that part (a worker, a
// relay, a lease contender) in the test binary itself, re-executed:
// [StartProcess] starts it with its config in an environment variable
// and hands the test each line the child writes to its stdout (its
// reports: "STATS ...", "IN", "ACK ..."); [Process.Kill] kills it and
// waits until every line it wrote has been handled; [StopProcesses] closes
// the children's stdin and kills those that do not stop in time. The
// child's side is [RunChild] in the package's TestMain: it decodes the
// config and runs the child's main with a context that ends with its
// stdin.
//
// Name chaos tests TestChaos<What> (TestChaosBulkWriter, ...) so that
// "go test -run Chaos ./..." selects them all.
//
// The package holds no pattern-specific logic: each package's chaos tests
// say what their operations do (the apply function of Reachable) and what
// their invariants are.
package chaos
