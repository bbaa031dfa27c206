/**
 * How long a durable broker's restore takes when one recipient's stored mail is past its byte bound (Mailbox's
 * `maxBytesPerTarget`): `ROWS` messages (200-character texts) from one sender to one away recipient are accepted and
 * stored (bounds wide enough to keep them all), then a second Router restores them under the default per-recipient
 * bound (16 MiB: about 12,300 of them fit) and the overall message bound raised past `ROWS`, so that bound is the one
 * that evicts. Prints the restore's wall time (and the setup's) and how many messages it kept, for `RUNS` runs.
 * Routers driven by hand (no sockets), the journal's batch committed to a memory store; imports the hand-driven Router
 * from test/support. Usage: `node bench/restore-recipient.ts [rows] [runs]` (docs/performance.md, "Restore past a
 * recipient's bound, seventy-first stop").
 */
import { randomUUID } from "node:crypto"
import { performance } from "node:perf_hooks"
import { Effect } from "effect"
import { StoreJournal } from "../src/broker/StoreJournal.ts"
import { makeMemory, makeMemoryMailState } from "../src/store/MailStore.ts"
import { registerFrame } from "../test/support/broker.ts"
import { fakeConnection } from "../test/support/fakeConnection.ts"
import { handRouter } from "../test/support/handRouter.ts"

const ROWS = Number(process.argv[2] ?? 50_000)
const RUNS = Number(process.argv[3] ?? 3)
const DAY = 24 * 60 * 60 * 1000
const T0 = 1_000_000
const TEXT = "x".repeat(200)

const run = Effect.gen(function*() {
  const began = performance.now()
  const store = makeMemory(makeMemoryMailState())
  const journal = new StoreJournal(() => {}, DAY)
  const wide = { mailboxCapacity: ROWS * 2, mailboxBytes: 1 << 30, mailboxBytesPerTarget: 1 << 30, mailboxRetention: DAY }
  const first = yield* handRouter(wide, () => T0, {}, false, journal)
  const away = first.attach(fakeConnection(1, false))
  first.batch(away, [registerFrame({ sessionId: "t" })])
  first.close(away)
  const sender = first.attach(fakeConnection(2, false))
  first.batch(sender, [registerFrame({ sessionId: "d" })])
  for (let i = 0; i < ROWS; i++) {
    first.batch(sender, [{ type: "send", to: "t", message: { id: randomUUID(), timestamp: T0, content: { text: TEXT } } }])
    // Its acknowledgement taken as a writer would: left parked, each send would walk them all.
    first.router.output.writes.takeForWrite(sender)
  }
  const taken = journal.take(T0)
  if (taken !== undefined) {
    yield* store.commit(taken.batch)
    journal.committed(taken)
  }
  const recovered = yield* store.load(T0 - DAY)
  const second = yield* handRouter({ mailboxCapacity: ROWS * 2, mailboxRetention: DAY }, () => T0, {}, false, new StoreJournal(() => {}, DAY))
  const start = performance.now()
  second.router.restore(recovered)
  const ms = performance.now() - start
  const setupMs = Math.round(start - began)
  return { rows: recovered.mail.length, kept: second.router.heldMail()?.messages, restoreMs: Math.round(ms), setupMs }
})

for (let i = 0; i < RUNS; i++) console.log(JSON.stringify(await Effect.runPromise(run)))
