/**
 * The store writer: the one fiber that commits the broker's journal to its
 * durable store (StoreJournal.ts, MailStore.ts). Woken when output waits for
 * a commit, it takes everything pending and commits it in one transaction —
 * at most one commit per tick of traffic, never one per message — then
 * releases the output held behind it. Changes nothing waits for (deletes of
 * delivered mail, traffic acknowledged on read) wake nothing at once: they
 * ride with the next commit, or go `LAZY_FLUSH` later. A failed commit is
 * logged, put back, and retried on a Schedule while new sends are refused
 * with its reason.
 */
import { Duration, Effect, Exit, Queue } from "effect"
import type { MailStoreService } from "../store/MailStore.ts"
import type { BrokerEvent } from "./RouterContext.ts"
import type { StoreCommits } from "./StoreCommits.ts"
import type { StoreJournal } from "./StoreJournal.ts"

/** Where commit latencies go (StoreCommits.ts), measured on the broker clock in nanoseconds. */
export interface CommitTiming {
  readonly commits: StoreCommits
  readonly nanos: () => bigint
}

/** How long after a failed commit the writer tries again. */
export const RETRY_AFTER = Duration.seconds(1)

/**
 * How long changes nothing waits for (deletes of delivered mail, and the
 * records and mail of messages acknowledged on read, StoreJournal.ts) wait
 * for a commit to ride with before they get their own. Short: a broker
 * killed meanwhile delivers that mail again (with 500 ms the simulation's
 * `crash-redelivery` came about six times as often: 25 in 2,000 seeds
 * against 6 in 3,000), and loses those records.
 */
export const LAZY_FLUSH = Duration.millis(10)

/**
 * Commits what is pending once (nothing when nothing is). Uninterruptible
 * once begun, so a shutdown never abandons a batch it already took. With
 * `timing`, each commit's latency and success are recorded (StoreCommits.ts).
 */
export const commitPending = (
  journal: StoreJournal,
  store: MailStoreService,
  now: () => number,
  log: (level: BrokerEvent["level"], message: string) => void,
  timing?: CommitTiming
): Effect.Effect<boolean> =>
  Effect.uninterruptible(Effect.suspend(() => {
    const taken = journal.take(now())
    if (taken === undefined) return Effect.succeed(true)
    const started = timing?.nanos()
    return store.commit(taken.batch).pipe(
      Effect.onExit((exit) =>
        Effect.sync(() => {
          if (timing !== undefined && started !== undefined) {
            timing.commits.record(Number(timing.nanos() - started) / 1e6, Exit.isSuccess(exit))
          }
        })
      ),
      Effect.match({
        onSuccess: () => {
          if (journal.failure !== undefined) log("info", "The broker can save its mail again; sends are accepted")
          journal.committed(taken)
          return true
        },
        onFailure: (error) => {
          const first = journal.failure === undefined
          journal.failed(taken, error.detail)
          if (first) log("warning", `${error.message}; new sends are refused until it can (retrying every ${Duration.format(RETRY_AFTER)})`)
          return false
        }
      })
    )
  }))

/**
 * Runs the writer until interrupted: waits for `wake`, commits, and after a
 * failure sleeps `RETRY_AFTER` (on the Clock) and tries again. Beside it, one
 * fiber turns a signal on `lazy` (changes wait that nothing waits for) into a wake `LAZY_FLUSH`
 * later. Two long-lived fibers rather than a race per commit: a race forks
 * and interrupts a fiber every time, on the path of every commit.
 */
export const runStoreWriter = (
  journal: StoreJournal,
  store: MailStoreService,
  wake: Queue.Queue<void>,
  lazy: Queue.Queue<void>,
  now: () => number,
  log: (level: BrokerEvent["level"], message: string) => void,
  timing?: CommitTiming
): Effect.Effect<never> => {
  const writer = Effect.forever(
    Queue.take(wake).pipe(
      Effect.andThen(commitPending(journal, store, now, log, timing)),
      Effect.tap((ok) => ok ? Effect.void : Effect.andThen(Effect.sleep(RETRY_AFTER), Queue.offer(wake, undefined)))
    ),
    { disableYield: true }
  )
  const lazyFlush = Effect.forever(
    Queue.take(lazy).pipe(Effect.andThen(Effect.sleep(LAZY_FLUSH)), Effect.andThen(Queue.offer(wake, undefined))),
    { disableYield: true }
  )
  return Effect.andThen(Effect.forkChild(lazyFlush), writer)
}
