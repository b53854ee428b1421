// Package dynamostore is the acs.Store on Amazon DynamoDB (aws-sdk-go-v2):
// one table, strings pk and sk, four global secondary indexes with generic
// names, on-demand capacity and time to live on expires_at
// (TableDefinition, CreateTable). No method Scans: every listing is a Query
// of one partition of the table or of an index, and every other read is a
// GetItem or BatchGetItem.
//
// # Items
//
// Records are JSON (the record types of shared/storerecord, not the domain
// types' tags) in the binary attribute d, so stored JSON (event bodies,
// metrics, message contents) comes back byte for byte. Next to it an item
// carries the keys of its indexes and the few attributes filters compare.
// Times in keys are timeKey: 16 hex digits of the Unix nanoseconds + 2^63
// (clamped to the years 1678..2262), so they sort as strings; "<t>#<id>"
// orders by time, then id.
//
//	item                  pk                    sk               indexes and attributes
//	user                  USER#<id>             USER             d v w
//	API key (user's copy) USER#<user>           KEY#<key id>     d
//	API key id guard      APIKEY#<key id>       #                d
//	API key by hash       KEYHASH#<sha256>      #                d (a copy of the key)
//	settings              USER#<user>           SETTINGS         d
//	quota                 USER#<user>           QUOTA            d v w
//	secret                USER#<user>           SECRET#<name>    d
//	conversation counters USER#<user>           CONVCOUNT        all top (numbers)
//	start task            TASK#<id>             #                d v w, gsi1 TASKS#<owner> <created>#<id>,
//	                                                             gsi2 TASKSUPDATED#<owner> <updated>#<id>,
//	                                                             created conv app, expires_at when done,
//	                                                             gsi4 OPENTASKS#<shard> <updated>#<id> until done
//	sandbox               SANDBOX#<id>          #                d v w status, gsi3 SANDBOXES#<owner> <created>#<id>,
//	                                                             gsi4 ALLSANDBOXES#<shard> <id>
//	sandbox by session    SESSIONKEY#<sha256>   #                id
//	conversation          CONV#<id>             #                d v w, gsi1 CONVS#<owner> <created>#<id>,
//	                                                             gsi3 CONVSBYSANDBOX#<sandbox> <id>,
//	                                                             title_lc updated sandbox sub
//	event                 EVENTS#<conversation> T#<time>#<id>    d (or blob) id kind source text
//	event id lookup       EVENTS#<conversation> I#<id>           at (the event's sk)
//	event text entry      EVENTS#<conversation> X#<time>#<id>    id kind source text (events with text only)
//	text index marker     EVENTS#<conversation> X                (every event with text has its entry)
//	message queue head    PENDING#<key>         #                v seq expires_at
//	queued message        PENDING#<key>         M#<seq, 16 hex>  d id seq expires_at
//	browser session       BSESSION#<sha256>     #                d expires_at
//	session (user's copy) USER#<user>           BSESSION#<sha256> d expires_at
//	sign-in token         SIGNIN#<sha256>       #                d v w expires_at
//	OIDC identity         IDENTITY#<sha256 of issuer NUL subject> # d
//
// Indexes:
//
//	gsi1 (gsi1pk, gsi1sk) ALL        an owner's conversations and start tasks by creation time
//	gsi2 (gsi2pk, gsi2sk) ALL        an owner's start tasks by update time
//	gsi3 (gsi3pk, gsi3sk) INCLUDE    an owner's sandboxes by creation time (status projected);
//	                      status     a sandbox's conversations
//	gsi4 (gsi4pk, gsi4sk) KEYS_ONLY  every sandbox, in AllSandboxShards range shards of the id;
//	                                 unfinished start tasks by update time, in the same shards (sparse)
//
// Index keys are attributes of the record itself, so an index follows its
// record in the same write: a conversation moved to another sandbox or a
// task updated leaves its old index entries atomically. Key attributes are
// left out when empty (a conversation without a sandbox has no gsi3 entry).
// Global secondary indexes are eventually consistent (usually well under a
// second behind): listings read from gsi1/gsi2 may miss a record written
// just before, and those read through gsi3/gsi4 (KEYS_ONLY-style) read the
// records themselves with strongly consistent BatchGetItem and drop entries
// whose record is gone or no longer matches. Reads of the table are
// strongly consistent.
//
// # Access patterns
//
//	GetUser, GetSettings, GetSecret    GetItem
//	CreateUser                         PutItem, attribute_not_exists(pk)
//	CreateAPIKey                       TransactWriteItems: guard + hash lookup + user's copy, each attribute_not_exists(pk)
//	GetAPIKeyByHash                    GetItem KEYHASH#<hash>
//	ListAPIKeys                        Query pk = USER#<user> AND sk BETWEEN "KEY#" AND "KEY#\U0010FFFF"
//	DeleteAPIKey                       GetItem guard, TransactWriteItems deleting the three items
//	PutSettings, PutSecret             PutItem
//	ListSecrets                        Query pk = USER#<user> AND sk BETWEEN "SECRET#" AND "SECRET#\U0010FFFF" (by name)
//	DeleteSecret                       DeleteItem, ReturnValues ALL_OLD
//	UpdateQuota                        GetItem, then PutItem on v = :v (attribute_not_exists(pk) when new)
//	CreateStartTask                    PutItem, attribute_not_exists(pk) OR expired
//	GetStartTask                       GetItem (expired: not found)
//	UpdateStartTask                    GetItem, then PutItem on v = :v
//	Search/ListStartTasks, by creation Query gsi1 gsi1pk = TASKS#<owner> [AND gsi1sk >=/<=/BETWEEN], either direction;
//	                                   filter: not expired, (app = :c OR conv = :c)
//	SearchStartTasks, by update        Query gsi2 gsi2pk = TASKSUPDATED#<owner> [AND gsi2sk range], either direction;
//	                                   filter: not expired, created >= :t, (app = :c OR conv = :c)
//	CountStartTasks                    the creation Query with Select COUNT
//	DeleteStartTask                    DeleteItem, attribute_exists(pk) AND not expired
//	CreateSandbox                      PutItem (or TransactWriteItems with the session lookup), attribute_not_exists(pk)
//	GetSandbox                         GetItem
//	GetSandboxBySessionKeyHash         GetItem SESSIONKEY#<hash>, GetItem SANDBOX#<id> (which must carry the hash)
//	UpdateSandbox                      GetItem, then PutItem on v = :v; TransactWriteItems when the session key
//	                                   changes (delete the old lookup, put the new one, attribute_not_exists(pk) OR id = :id)
//	ListSandboxes                      Query gsi3 gsi3pk = SANDBOXES#<owner> [AND gsi3sk <= :last] descending, BatchGetItem
//	ListSandboxesByStatus (extra)      the same Query, filter status = :s
//	ListUnfinishedStartTasks           Query gsi4 gsi4pk = OPENTASKS#<shard> AND gsi4sk <= :before, each shard,
//	                                   merged by update time; BatchGetItem of the records
//	ListAllSandboxes                   Query gsi4 gsi4pk = ALLSANDBOXES#<shard> [AND gsi4sk >= :last], shard by shard,
//	                                   BatchGetItem: every sandbox in id order
//	DeleteSandbox                      GetItem, TransactWriteItems: record on v = :v + session lookup
//	CreateConversation                 TransactWriteItems: record (attribute_not_exists(pk)) + ADD to CONVCOUNT
//	GetConversation                    GetItem
//	UpdateConversation                 GetItem, then PutItem on v = :v (TransactWriteItems with ADD to CONVCOUNT
//	                                   when it becomes or stops being a sub-conversation)
//	SearchConversations                Query gsi1 gsi1pk = CONVS#<owner> [AND gsi1sk created range / token] descending;
//	                                   filter: attribute_not_exists(sub), contains(title_lc, :t), updated >= / < :u,
//	                                   sandbox = :s; pages read until limit+1 matches or the end
//	CountConversations                 GetItem CONVCOUNT (all or top) without a filter; else the Query, Select COUNT
//	ListConversationsBySandbox         Query gsi3 gsi3pk = CONVSBYSANDBOX#<sandbox>, BatchGetItem
//	DeleteConversation                 GetItem, TransactWriteItems: record on v = :v + ADD -1 to CONVCOUNT
//	PutEvents                          on a partition first seen: GetItem of the marker, Query Limit 1 of "T#".."T$",
//	                                   PutItem of the marker when there is no event yet;
//	                                   TransactWriteItems of up to 100 items: per event the id lookup, the event and,
//	                                   with text, its text entry, each attribute_not_exists(pk); ids found to exist
//	                                   are dropped and the rest retried
//	SearchEvents                       Query pk = EVENTS#<conv> AND sk BETWEEN "T#<gte>" AND "T#<lt>" (default "T#".."T$",
//	                                   narrowed by the token), either direction, strongly consistent;
//	                                   filter: kind = :k, source = :s
//	SearchEvents with body             GetItem of the marker (then remembered); Query of "X#<gte>".."X#<lt>" (without the
//	                                   marker: of the events, "T#…"), filter kind, source, contains(text, :b), at most
//	                                   Options.BodyScanItems items evaluated in at most 2 calls; BatchGetItem of the
//	                                   events found
//	CountEvents                        the same Query, Select COUNT (with body: of the text entries)
//	GetEvents                          BatchGetItem of the id lookups, then of the events
//	DeleteEvents                       Query pk = EVENTS#<conv> (keys), BatchWriteItem deletes, then the event blobs
//	AddPendingMessage                  Query pk = PENDING#<key>, TransactWriteItems: head (v = :v, or
//	                                   attribute_not_exists(pk)) SET v, seq + message attribute_not_exists(pk)
//	ListPendingMessages                Query pk = PENDING#<key>
//	DeletePendingMessage               Query pk = PENDING#<key>, TransactWriteItems: delete message + ADD 1 to head v
//
// # Paging
//
// A listing reads pages (Query Limit) until it holds limit+1 matches or the
// partition ends; it returns limit and, when there was one more, a token.
// Page tokens are base64url of a tag naming the listing and its order, the
// partition listed (owner, conversation, shard) and the sort key of the last
// item returned; the next page narrows the key condition to the keys after
// it, so a token stays valid when that item is deleted, and a token of
// another listing, order or partition is acs.ErrInvalid.
//
// # Concurrency
//
// Update methods are optimistic: read the record (strongly consistent), run
// fn on it, write the result on the condition that its version v did not
// change, and on a failed condition (or a transaction conflict) start again
// after a jittered exponential backoff (2 ms doubling to 100 ms, at most 100
// attempts, then acs.ErrUnavailable). fn may thus run more than once. A slot
// reservation (acs.Sandbox.Reserve in UpdateSandbox) can therefore never
// overfill a sandbox. Records written by PutItem carry a random write token
// w: when the SDK retries a write whose response was lost and the retry
// fails its condition, the store recognises its own write instead of
// reporting a conflict or running fn again. TransactWriteItems carry the
// SDK's idempotency token (ClientRequestToken) for the same reason.
//
// Pending messages serialise on their queue head: an add reads the queue,
// and writes the message and the head's next version in one transaction on
// the condition that the version it read is current; a delete writes a new
// version too. Concurrent adds thus never exceed max, and each gets its exact
// position.
//
// # Body search
//
// Only events with text (messages) can match a body filter, so each has a
// text entry next to it ("X#", same order), and a body search reads those:
// its cost follows the conversation's messages, not its log. A page
// examines at most Options.BodyScanItems entries (DefaultBodyScanItems,
// 1000) in at most two Queries; when that budget runs out first, the page
// ends with what it found — fewer than the limit, possibly none — and a
// token to go on. Tokens name event sort keys either way. A partition that
// held events before the index existed has no marker item: its body
// searches read its event items (which keep their text) under the same
// budget.
//
// # Large events
//
// An event item holds its JSON while JSON and text together are at most
// InlineEventLimit (350 KB; items are limited to 400 KB). A larger event's
// JSON goes to Options.Blobs under EventBlobKey ("events/<conversation>/<event
// id>.json", path-escaped) before the item, which then holds the blob key
// instead (and the text, cut to InlineEventLimit); reads return the blob's
// bytes transparently. Without Blobs such events are acs.ErrInvalid. A blob
// whose item was never written (a failed put) is overwritten by the retry or
// removed by DeleteEvents, which deletes the conversation's blob prefix.
//
// # Expiry
//
// expires_at (epoch seconds) is the table's time-to-live attribute. Finished
// start tasks (READY, ERROR) expire TaskRetention (30 days) after their last
// update; queued messages PendingRetention (7 days) after they were queued,
// and a queue's head a day after its last message. DynamoDB deletes expired
// items lazily, so readers ignore items whose expires_at has passed (by
// Options.Now): reads and updates report them not found, listings and counts
// filter them out, and a create may reuse an expired id.
//
// # Errors
//
// Throttling (ProvisionedThroughputExceeded, ThrottlingException,
// RequestLimitExceeded), server faults (InternalServerError, 5xx), transaction
// conflicts, network failures and deadlines that remain after the SDK's own
// retries wrap acs.ErrUnavailable (HTTP 503 with Retry-After); an item over
// the size limit wraps acs.ErrInvalid. A write reported as failed for a
// throttle or server error was not applied; one reported OK was. A
// transport failure after the request was sent is ambiguous: it is reported
// as ErrUnavailable, and retrying is safe (conditional writes, write tokens).
// PutEvents writes batches in order and may fail after storing its first
// batches; storing the events again is idempotent.
//
// # Capacity
//
// Every call passes ReturnConsumedCapacity TOTAL and Consumed adds up what
// DynamoDB reports (indexes and transactions included). Calls that fail (a
// cancelled transaction, a failed condition) report nothing, though DynamoDB
// charges them.
package dynamostore
