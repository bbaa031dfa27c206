/**
 * The durability promise under kill -9 (issue 13, docs/store.md): a real
 * broker process (`intercom broker`, durability sqlite by default) carries a
 * mixed load — live recipients, an offline one, asks and their replies —
 * from `IntercomClient`s in this process, and is killed with SIGKILL at
 * `KILLS` random points (after a random 1–6 acknowledgements) and restarted
 * each time. In the end every acknowledged message has reached its recipient
 * exactly once, in send order per sender→recipient.
 *
 * The clients ask for `received-v1` (Custody.ts): without it, mail a dying
 * broker wrote that was still unread in a client's socket when that client's
 * next write failed (EPIPE) was lost, in two of six runs before the fix.
 *
 * No sleeps: the killer waits for acknowledgements, a restart waits for the
 * broker's startup line, and the final check waits for deliveries. Needs
 * `npm run build` (npm test does it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Queue, Stream } from "effect"
import * as path from "node:path"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import type { IntercomClientService } from "../../src/client/models.ts"
import { Prng } from "../../src/testing/Prng.ts"
import { tempDir } from "../support/broker.ts"
import { cleanEnv, startBroker } from "../cli/support.ts"
import { makeClient, registrationOf } from "../client/support.ts"

/** Kill points per run: the proof is 100; `KILL_NINE_KILLS` changes it (e.g. 1,000 for a soak). */
const KILLS = Number(process.env["KILL_NINE_KILLS"] ?? "100")
const SEED = "kill-nine"

/** Who sent what to whom: `<from>→<to> #<n>`, parsed back on receipt. */
const textOf = (from: string, to: string, n: number, kind: "msg" | "ask" | "reply") => `${from}→${to} #${n} ${kind}`
const parse = (text: string) => {
  const match = /^(\S+)→(\S+) #(\d+) /.exec(text)
  return match === null ? undefined : { pair: `${match[1]}→${match[2]}`, n: Number(match[3]) }
}

describe("kill -9 of a durable broker", () => {
  it.live(`at ${KILLS} random points during a mixed load: every acknowledged message is delivered exactly once, in order`, () =>
    Effect.gen(function*() {
      const root = yield* tempDir("ei-kill9-")
      const agentDir = path.join(root, "agent")
      const intercomDir = path.join(agentDir, "intercom")
      const env = cleanEnv(root)
      // The fast path (`--dir` only): the broker starts without loading the CLI. Clients keep it busy throughout.
      const args = ["--dir", agentDir]
      let broker = yield* startBroker(args, env)

      const optionsFor = (id: string): IntercomClientOptions => ({
        agentDir,
        intercomDir,
        socketPath: path.join(intercomDir, "broker.sock"),
        sessionId: id,
        registration: registrationOf(id),
        launch: false,
        reconnectBaseMs: 10,
        reconnectMaxMs: 50,
        rejoinGraceMs: 5_000,
        connectTimeoutMs: 20_000,
        sendTimeoutMs: 20_000
      })
      const acked = new Map<string, Array<number>>()
      const received = new Map<string, Array<number>>()
      const acks = yield* Queue.unbounded<void>()
      const arrivals = yield* Queue.unbounded<void>()
      const note = (map: Map<string, Array<number>>, text: string) => {
        const parsed = parse(text)
        if (parsed === undefined) return
        const list = map.get(parsed.pair) ?? []
        list.push(parsed.n)
        map.set(parsed.pair, list)
      }

      /** A client that records what it receives; `respond` answers asks. */
      const participant = (id: string, respond: boolean) =>
        Effect.gen(function*() {
          const { client, close } = yield* makeClient(optionsFor(id))
          yield* client.connect
          yield* Effect.forkScoped(Stream.runForEach(client.messages, (inbound) =>
            Effect.gen(function*() {
              note(received, inbound.message.content.text)
              yield* Queue.offer(arrivals, undefined)
              if (respond && inbound.message.expectsReply === true) {
                const parsed = parse(inbound.message.content.text)
                const text = textOf(id, inbound.from.id, parsed?.n ?? -1, "reply")
                const result = yield* Effect.result(
                  client.send({ to: inbound.from.id, message: { id: crypto.randomUUID(), timestamp: 0, content: { text }, replyTo: inbound.message.id } })
                )
                if (result._tag === "Success") {
                  note(acked, text)
                  yield* Queue.offer(acks, undefined)
                }
              }
            })), { startImmediately: true })
          return { client, close }
        })

      /** Sends `count` messages (or forever), one at a time, round-robin over `targets`; records each acknowledged one. */
      const sender = (client: IntercomClientService, from: string, targets: ReadonlyArray<string>, counters: Map<string, number>, count?: number) =>
        Effect.gen(function*() {
          for (let i = 0; count === undefined || i < count; i++) {
            const to = targets[i % targets.length]!
            const n = counters.get(to) ?? 0
            counters.set(to, n + 1)
            const kind = to === "r1" && n % 3 === 0 ? "ask" : "msg"
            const text = textOf(from, to, n, kind)
            const result = yield* Effect.result(client.send({
              to,
              message: { id: crypto.randomUUID(), timestamp: 0, content: { text }, ...(kind === "ask" ? { expectsReply: true } : {}) }
            }))
            if (result._tag === "Success") {
              note(acked, text)
              yield* Queue.offer(acks, undefined)
            }
          }
        })

      const s1 = yield* participant("s1", false)
      const s2 = yield* participant("s2", false)
      yield* participant("r1", true)
      yield* participant("r2", false)
      // r3 is offline for the whole run: registered once, gone, back at the end. Its mail lives through every crash.
      const r3 = yield* participant("r3", false)
      yield* r3.close
      const counters1 = new Map<string, number>()
      const counters2 = new Map<string, number>()
      yield* sender(s1.client, "s1", ["r3"], counters1, 3)
      yield* sender(s2.client, "s2", ["r3"], counters2, 3)
      assert.deepStrictEqual([acked.get("s1→r3"), acked.get("s2→r3")], [[0, 1, 2], [0, 1, 2]], "test setup: r3's mail was not queued")

      const load = yield* Effect.forkChild(Effect.all([
        sender(s1.client, "s1", ["r1", "r2"], counters1),
        sender(s2.client, "s2", ["r2", "r1"], counters2)
      ], { concurrency: "unbounded" }))

      const prng = new Prng(SEED)
      for (let kill = 0; kill < KILLS; kill++) {
        yield* Queue.takeN(acks, 1 + (prng.nextUint32() % 6))
        yield* broker.kill("SIGKILL")
        yield* broker.waitExit("30 seconds")
        broker = yield* startBroker(args, env)
      }
      yield* Queue.takeN(acks, 5)
      yield* Fiber.interrupt(load)

      yield* participant("r3", false)
      const everyAckedArrived = () =>
        [...acked].every(([pair, ns]) => ns.every((n) => (received.get(pair) ?? []).includes(n)))
      yield* Effect.gen(function*() {
        while (!everyAckedArrived()) yield* Queue.take(arrivals)
      }).pipe(Effect.timeoutOrElse({
        duration: "60 seconds",
        orElse: () => Effect.die(new Error(`acknowledged but never delivered: ${JSON.stringify(missing(acked, received))}`))
      }))

      let total = 0
      for (const [pair, ns] of acked) {
        total += ns.length
        const got = received.get(pair) ?? []
        for (const n of ns) assert.strictEqual(got.filter((m) => m === n).length, 1, `${pair} #${n}: delivered ${got.filter((m) => m === n).length} times`)
        assert.deepStrictEqual(got, [...got].sort((a, b) => a - b), `${pair}: out of order`)
        assert.strictEqual(new Set(got).size, got.length, `${pair}: a message arrived twice`)
      }
      assert.deepStrictEqual([received.get("s1→r3"), received.get("s2→r3")], [[0, 1, 2], [0, 1, 2]])
      assert.isAbove(received.get("r1→s1")?.length ?? 0, 0, "no reply crossed a crash")
      assert.isAbove(total, KILLS, "the load acknowledged too little to mean anything")
    }), { timeout: 240_000 })
})

const missing = (acked: Map<string, Array<number>>, received: Map<string, Array<number>>) =>
  [...acked].flatMap(([pair, ns]) => ns.filter((n) => !(received.get(pair) ?? []).includes(n)).map((n) => `${pair} #${n}`))
