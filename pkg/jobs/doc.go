// Package jobs keeps the state and progress of the serverless pipeline's jobs
// in one DynamoDB table: a small state machine per job and idempotent
// progress counters that the checker workers update.
//
// The pipeline runs: API upload or S3 drop folder -> ingest splits the URL
// list into per-domain SQS messages -> checker workers check the URLs ->
// result parts in S3 -> summary. Every stage records what it did here.
//
// # States
//
//	splitting ──Start──> running ──Transition──> summarizing ──Transition──> done
//	    │                   │
//	    └─────Cancel────────┴──> cancelled
//
// Fail moves any non-final state to failed. done, cancelled and failed are
// final (State.Final): nothing leaves them.
//
// # Table layout
//
// The caller names the table (the pipeline uses DefaultTable, "urlcheck-jobs").
// Partition key "job" (S, the job ID), sort key "sk" (S), on-demand billing,
// TTL on the attribute "expires" (N, epoch seconds). CreateTable makes such a
// table; on AWS it comes from the deployment template. Each job has these
// items:
//
// sk "meta", one per job, created by Store.Create:
//
//	state        S   State
//	source       S   where the list came from (e.g. "api", "inbox")
//	key          S   the inbox object key of the list
//	etag         S   that object's ETag
//	name         S   the job's display name
//	created      N   unix milliseconds; 0 or absent = unset (same for the next three)
//	started      N   set by Start
//	finished     N   set on entering a final state
//	updated      N   set by every write to meta
//	lines        N   input lines accepted
//	rejected     N   invalid input lines
//	urls         N   unique URLs, that is items to check
//	shards       N   number of progress shards, set by Start
//	shards_done  N   shards whose done count reached their total
//	done_shards  NS  the indexes counted in shards_done (makes marking idempotent)
//	sent         N   groups enqueued so far: a high-water mark for resuming an
//	                 interrupted split; only ever raised (SetSent)
//	top          S   JSON of []DomainCount
//	error        S   why the job failed
//	expires      N   epoch seconds; DynamoDB deletes the item some time after
//
// sk "shard#00000" ... "shard#%05d", one per progress shard 0..shards-1:
//
//	total    N   items in the shard, set by Start
//	done     N   items counted so far (= size of seen)
//	seen     NS  the keys (Counted.Key) of the counted items
//	c_<cls>  N   counted items whose result class is <cls>, e.g. c_ok, c_not_found
//	updated  N   unix milliseconds of the latest Record that counted something
//	expires  N   copied from meta by Start, when meta has one
//
// # Idempotent counting
//
// Record adds a batch of keys to a shard with one UpdateItem per chunk of at
// most MaxRecordChunk keys, conditioned on none of the chunk's keys being in
// seen yet. When the condition fails, DynamoDB returns the item as it was
// (ReturnValuesOnConditionCheckFailure ALL_OLD); Record drops the keys already
// present and retries with the rest. So a key is counted once however often
// its message is delivered and whether or not the worker died after counting,
// and done always equals the size of seen.
//
// A shard is complete when its total is set and done >= total. The write
// that observes this marks the shard on meta (ADD shards_done 1, ADD
// done_shards {i}, conditioned on i not yet in done_shards), so each shard is
// counted once. The one meta write that leaves the job running with
// shards_done == shards (either the last shard's mark, or Start's own write
// when every shard was already complete) reports complete=true to its
// caller, which must then call Transition(Running, Summarizing). Because the
// writes to meta are serialised by DynamoDB, at most one call in the whole
// job (Start and every Record) returns complete=true.
//
// At most once, not exactly once: if the caller that got complete=true
// crashes before its Transition, or an SDK retry of a marking write whose
// first response was lost meets its own earlier write, no one gets true and
// the job stays running with ShardsDone == Shards. A sweeper that looks at
// Progress (state running, ShardsDone >= Shards, LastProgress old) recovers
// such a job with Transition(Running, Summarizing). A worker that died after
// counting but before marking is covered: the redelivered Record finds the
// keys already seen, sees the shard complete and marks it.
//
// # Costs and limits
//
// A shard item holds every counted key, so it grows with the shard: DynamoDB
// stores a key below a million in about 4 bytes, so 10,000 items make a
// shard item of roughly 40 KB (the item limit is 400 KB). Every Record
// writes, and gets back, the whole item, and DynamoDB bills a write by item
// size (1 WCU per KB), so keep shards small: a few thousand items each at
// most, and more shards for bigger jobs. Progress reads every item of the
// job (a projection would not lower the read cost).
//
// Shard items get the job's expires from Start. Shard items of a job that
// never starts (for example one cancelled while splitting, after some
// groups were checked) have no TTL; delete them with the job's partition.
package jobs
