// Package wire is tablekit's Table service data plane. It speaks the REST
// API (a [Client]): point read,
// query page, insert, update, merge, insert-or-replace, insert-or-merge,
// delete and entity group transactions ($batch), as the "Table service REST
// API" reference describes them. It is what tablekit's Table stands on.
//
// A [Client] sends each request on an azcore runtime.Pipeline that its
// owner (tablekit's Account) builds once: the credential, azcore's retry,
// the Meter, tracing, the Governor's throttling reports, the caller's own
// policies (a fault injector among them) are ordinary policies of that
// pipeline. Nothing is hidden inside another client's pipeline, and no
// answer is rewritten: the Client returns the answer's body as the service
// sent it, and the headers its callers need (ETag, continuation). Decoding
// entities and encoding a transaction's body are the callers' business
// (tablekit's entity and $batch codecs).
//
// State a caller's policies need about one request (which partition it
// writes, what its earlier tries left open) travels with the request:
// [Call.Value] is attached with policy.Request.SetOperationValue, which
// azcore carries through every policy and across the retry policy's
// clones of the request. Every request also carries its [Operation], so a
// policy that counts requests by operation need not parse URLs.
//
// Credentials are policies too: [SharedKey] signs requests as the Table
// service's Shared Key scheme says, [SAS] appends a shared access
// signature, and a token credential goes through azcore's
// runtime.NewBearerTokenPolicy with [TokenScope].
//
// It also holds what the answers mean: the errors a request ends in
// ([ServiceError], [RequestError], [TransactionError], the sentinels, and
// [Wrap] from the SDK's errors), and the names of storage requests
// ([Classify]) that the Meter counts by and the chaos harness filters by.
// Package tablekit declares aliases of the public errors; wire imports no
// public tablekit package.
package wire
