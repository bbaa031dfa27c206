/**
 * The end of a run: heal, settle, check, close, report. The final checks are
 * docs/testing.md's: every session connected again, the registry, each
 * scope's list and the mailbox agree with the world, each client's
 * membership view agrees with its scope's list (membershipViews.ts, once
 * every reconnect's rejoin grace is over), every ask settled, and every
 * acknowledged message accounted for; then nothing may keep running.
 *
 * A session that moved to another group (simulation/groupMove.ts) first
 * registers once more in each group it was in, then in its own again.
 */
import { Cause, Effect, Exit, Fiber, Option, Scope } from "effect"
import { TestClock } from "effect/testing"
import type { IntercomNotConnected } from "../../client/errors.ts"
import type { SendError } from "../../client/requests.ts"
import { describeFailure } from "../SimAgent.ts"
import { crashBroker, startBroker } from "./broker.ts"
import { handleOf } from "./handles.ts"
import { foldSettlesAt } from "./membershipViews.ts"
import { type HostileState, stopHostile } from "./hostile.ts"
import { currentLink, lifecycle, type SessionState, startSession, stopSession } from "./sessions.ts"
import { advance, idleChecks, step, worldStep } from "./steps.ts"
import type { SimReport } from "./types.ts"
import type { World } from "./world.ts"

/** How long a moved session stays registered in each group it was in at the end, for its mail there to reach it. */
const REVISIT_MS = 5_000

/**
 * What the finish's resend of a lost message (`exit`) says the broker's replay record holds, as the ledger reads it
 * (`recordSaid`: "delivered", a refusal's code, else the error's tag): a resend the client ends as the loss carrying
 * the broker's refusal (client/afterLoss.ts: a resend of a message the client lost on the way within the replay
 * window may be read after the loss, and the record's expiry or eviction ends it so) says that refusal's code — `E_DELIVERY_EXPIRED`,
 * `E_DELIVERY_EVICTED` — not "ConnectionLost", which the fates (untold eviction, ask expiry) would not read as the
 * record (review revda's suspicion).
 */
export const recordSaysOf = (exit: Exit.Exit<unknown, SendError | IntercomNotConnected>): string =>
  Exit.isSuccess(exit)
    ? "delivered"
    : Cause.findErrorOption(exit.cause).pipe(
      Option.match({
        onNone: () => "no answer",
        onSome: (error) =>
          "code" in error
            ? error.code
            : error._tag === "ConnectionLost" && error.refusal !== undefined
            ? error.refusal.code
            : error._tag
      })
    )

/** Simulated time a closing world may take before `closeWorld` stops waiting for it. */
const CLOSE_BOUND_MS = 5 * 60_000

/** Simulated time between two looks at a closing world (the step of `worldStep`). */
const CLOSE_TICK_MS = 100

/**
 * Closes a world that did not reach `finish`'s own close (its script failed,
 * died or was interrupted, or the world failed to start), moving the clock
 * while it closes: nothing else moves time once the driver has stopped.
 * A client's orderly close waits on the clock: it joins a connect attempt
 * in flight for up to 2 s — one sleeping out its reconnect backoff when a
 * broker started after the client closed first (a Scope closes the newest
 * first) — then waits up to 2 s for its `unregister` to be answered. A
 * close still running after
 * `CLOSE_BOUND_MS` of simulated time is left behind and the caller goes on.
 * A world already closing or closed returns at once.
 */
export const closeWorld = (world: World): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (world.scope.state._tag === "Closed") return
    world.ledger.note("the run ended before finish: the world closes")
    const closing = yield* Effect.forkDetach(Scope.close(world.scope, Exit.void), { startImmediately: true })
    const deadline = world.now() + CLOSE_BOUND_MS
    while (closing.pollUnsafe() === undefined && world.now() < deadline) yield* TestClock.adjust(CLOSE_TICK_MS)
    if (closing.pollUnsafe() === undefined) {
      world.ledger.note(`the world did not close within ${CLOSE_BOUND_MS / 60_000} simulated minutes: left behind`)
    }
  })

/**
 * Ends the run: heals every fault, starts what is down, lets the world
 * settle, makes the final checks, asks the broker's replay record about
 * unexplained losses, classifies every message, closes the world and checks
 * that no fiber is left. Then reports.
 */
export const finish = (
  world: World,
  states: ReadonlyArray<SessionState>,
  hostiles: ReadonlyArray<HostileState> = []
): Effect.Effect<SimReport> =>
  Effect.gen(function*() {
    const { ledger, settleMs } = world
    ledger.note("finish: heal every fault, restart what is down, settle")
    for (const link of world.links.values()) link.heal()
    yield* worldStep(world, undefined, startBroker(world))
    for (const state of states) {
      if (state.client === undefined) yield* lifecycle(world, state, "starts", startSession(world, state))
    }
    yield* advance(world, settleMs)
    // A session a group move took elsewhere (simulation/groupMove.ts) is owed what was sent to it in every
    // group it was in — the broker keeps a session's mail in the group it was sent in: its client instance
    // registers it in each of them once more, then in its own again, before the mailbox is judged.
    let revisited = false
    for (const state of states) {
      const home = state.meta.group?.trim() || "default"
      const visited = ledger.movedFrom(state.meta.id).filter((group) => group !== home)
      if (visited.length === 0 || state.client === undefined) continue
      revisited = true
      const handle = handleOf(world, state)
      for (const group of visited) {
        yield* handle.moveGroup(group)
        yield* advance(world, REVISIT_MS)
      }
      yield* handle.moveGroup(undefined)
    }
    if (revisited) yield* advance(world, settleMs)
    // Hostile sessions leave before the checks: the world to check is the healthy one.
    for (const hostile of hostiles) yield* stopHostile(world, hostile)
    if (hostiles.length > 0) yield* advance(world, 1_000)
    ledger.note("final checks")
    // Everyone is connected and registered; the registry, lists and mailbox agree.
    for (const state of states) {
      const status = state.client === undefined ? undefined : yield* state.client.service.status
      ledger.check(status?.connected === true, "not-reconnected", () =>
        `${state.meta.name} is not connected ${settleMs} ms after the faults healed (${status?.lastError ?? "stopped"})`)
    }
    yield* idleChecks(world)
    for (const link of world.links.values()) {
      ledger.check(!link.lingering, "registry-mismatch", () =>
        `the broker never saw link #${link.id} of ${ledger.nameOf(link.owner ?? "?")} end, ${settleMs} ms after the faults healed`)
    }
    const current = world.state.broker
    if (current !== undefined) {
      const count = yield* current.core.sessionCount
      ledger.check(count === states.length, "registry-mismatch", () =>
        `the broker has ${count} live session(s), the world ${states.length}`)
      const held = (yield* current.core.stats).mailbox
      if (held > 0) {
        // Mail waiting although every target is connected: make every session register again
        // and see where it goes (deliveries now are `stranded-mail`).
        ledger.note(`the mailbox holds ${held} message(s) with every session connected: every session registers again`)
        ledger.setRescue(true)
        for (const state of states) {
          const link = currentLink(state)
          if (link !== undefined) yield* worldStep(world, undefined, link.sever("client"))
        }
        yield* advance(world, 15_000)
        ledger.setRescue(false)
      }
      const stats = yield* current.core.stats
      // Less the cancelled copies kept for client instances that read them and are not connected: the
      // registrations above gave every connected reader its own, and the rest wait for their readers
      // (WithdrawnCopies.ts; the mailbox's retention ends them).
      const waiting = stats.mailbox - stats.withdrawnCopiesHeld
      ledger.check(waiting === 0, "mailbox-not-empty", () =>
        `${waiting} message(s) still in the mailbox with every session connected`)
      ledger.check(stats.unregistered === 0, "registry-mismatch", () =>
        `${stats.unregistered} connection(s) still unregistered`)
    }
    // Every client's reconciliation after its last reconnect has run and been answered, and every fold has
    // listed (membershipViews.ts).
    let viewsSettled = 0
    for (const state of states) {
      const client = state.client
      if (client === undefined) continue
      viewsSettled = Math.max(viewsSettled, foldSettlesAt(client.membership, client.service.rejoinGraceMs, world.now()))
    }
    if (viewsSettled > world.now()) {
      ledger.note(`the clients' membership views reconcile until ${viewsSettled} ms`)
      yield* advance(world, viewsSettled - world.now())
    }
    // A list shows the lister's scope and group (groups-v1): one list per (scope, group).
    const byScope = new Map<string, Array<SessionState>>()
    for (const state of states) {
      const key = `${state.meta.scopeId ?? ""}\u0000${state.meta.group?.trim() || "default"}`
      byScope.set(key, [...(byScope.get(key) ?? []), state])
    }
    for (const members of byScope.values()) {
      const first = members[0]
      if (first === undefined) continue
      const listed = yield* handleOf(world, first).list
      if (listed === undefined) continue
      const exit = yield* listed.result("30 seconds")
      if (Exit.isSuccess(exit)) {
        const ids = exit.value.sessions.map((session) => session.id).sort()
        const expected = members.map((state) => state.meta.id).sort()
        ledger.check(ids.join(",") === expected.join(","), "registry-mismatch", () =>
          `${first.meta.name}'s list shows [${ids.map((id) => ledger.nameOf(id)).join(", ")}], its scope and group have [${
            expected.map((id) => ledger.nameOf(id)).join(", ")
          }]`)
        // Each member believes what a list of its own would show, less itself (membership-view).
        for (const member of members) {
          const fold = member.client?.membership
          if (fold === undefined) continue
          const wrong = fold.listed
            ? fold.compare(exit.value.sessions.filter((session) => session.id !== member.meta.id), (id) => ledger.nameOf(id))
            : "never listed: it cannot know who was there before it registered"
          if (wrong !== undefined) ledger.violate("membership-view", `${member.meta.name}'s client ${member.client?.key ?? "?"} ${wrong}`)
        }
      } else {
        ledger.violate("registry-mismatch", `${first.meta.name} could not list: ${describeFailure(exit.cause)}`)
      }
    }
    for (const alias of ledger.unsettledAsks()) ledger.violate("ask-unsettled", `${alias} never settled`)
    for (const state of states) {
      const waiting = state.generation === undefined ? false : yield* state.generation.service.waiting
      ledger.check(!waiting, "ask-unsettled", () => `${state.meta.name} still holds its reply-waiter slot`)
    }
    // Ask the broker's replay record about losses nothing else explains (P46).
    for (const lost of ledger.unexplained()) {
      const client = states.find((state) => state.meta.id === lost.sender)?.client
      if (client === undefined) continue
      const resend = lost.channel === "supervisor"
        ? client.service.supervisorSend({ message: lost.message })
        : client.service.send({ to: lost.target, message: lost.message })
      const answer = yield* step(world, resend, world.steps, client.key)
      while (answer.pollUnsafe() === undefined) yield* advance(world, 100)
      const exit = yield* Fiber.await(answer)
      ledger.recordSaid(lost.message.id, recordSaysOf(exit))
    }
    const messages = ledger.finish()
    // After the messages' fates: a reply the broker lost (`silent-loss`) also times its ask out; the loss is the cause.
    for (const line of ledger.answersAfterTimeout()) ledger.violate("answer-after-timeout", line)
    for (const line of ledger.answeredElsewhereFalsely()) ledger.violate("answered-elsewhere-false", line)
    for (const line of ledger.refusedAsTimeout()) ledger.violate("refused-as-timeout", line)
    const asks = ledger.askTally()
    const groups = ledger.groupTally()
    // Close the world; nothing may keep running.
    world.state.finished = true
    yield* worldStep(world, "the world closes", Effect.gen(function*() {
      for (const state of states) yield* state.lock.withPermits(1)(stopSession(world, state, "stop"))
      yield* crashBroker(world)
    }))
    yield* Scope.close(world.scope, Exit.void)
    const leaks = world.watch.liveUnder("")
    ledger.check(leaks.length === 0, "fiber-leak", () =>
      `after the world closed: ${leaks.map(([owner, count]) => `${owner}: ${count}`).join(", ")}`)
    const violations = ledger.violations
    const tolerate = new Set(world.config.tolerate ?? [])
    const tolerated = violations.filter((violation) => tolerate.has(violation.kind)).length
    return {
      seed: world.seed,
      durability: world.durability,
      ok: tolerated === violations.length,
      violations,
      tolerated,
      messages,
      asks,
      groups,
      checks: ledger.checks,
      frames: ledger.frames,
      events: ledger.trace.length,
      simulatedMs: world.now(),
      fibersStarted: world.watch.started(),
      paths: { ...world.state.paths },
      insertedOps: { ...world.state.insertedOps },
      trace: ledger.trace
    } satisfies SimReport
  })
