/**
 * Size: about 470 lines, one handle whose actions share the step helpers
 * above them; split by concern would scatter one object's fields.
 *
 * `SimSession`: the handle a scenario drives one session with. Every action
 * is a step of the world — a session action (send, ask, reply, list) runs in
 * the current generation and returns a `Pending`; a lifecycle action or a
 * fault runs as a world step — and every one is written to the trace with
 * its outcome. A cancel or supersede of a recent send (`cancelRecent`,
 * `supersedeRecent`) goes through the session's client, as an engine calls
 * it: the session tool has neither.
 */
import { Cause, Duration, Effect, Exit, Fiber, FiberSet, Option } from "effect"
import type { IntercomClientService } from "../../client/models.ts"
import type { IntercomSessionService } from "../../session/IntercomSession.ts"
import { newMessage } from "../../session/Sending.ts"
import { Prng } from "../Prng.ts"
import { describeFailure } from "../SimAgent.ts"
import {
  buildGeneration,
  closeGeneration,
  currentLink,
  lifecycle,
  RECENT_SENDS,
  type RecentSend,
  type SlowStart,
  type SessionState,
  startSession,
  stopSession
} from "./sessions.ts"
import { advance, millisOf, pending, step, worldStep } from "./steps.ts"
import type { Pending, SimSession } from "./types.ts"
import type { World } from "./world.ts"

/** How often an ask of a `--client-timings` world leaves its timeout to the session's drawn default. */
const SESSION_DEFAULT_ASK_TIMEOUT_CHANCE = 0.25

/**
 * Whether the ask `alias` waits its session's default ask timeout instead of
 * the workload's: one in four in a `--client-timings` world, whose sessions
 * draw that default (1–60 s), so the drawn value is exercised; never
 * otherwise. Drawn from a stream of its own per ask, so no other draw shifts.
 */
const usesSessionDefault = (world: World, alias: string): boolean =>
  world.config.clientTimings !== undefined &&
  Prng.derive(world.seed, `${alias}/session-default-timeout`).chance(SESSION_DEFAULT_ASK_TIMEOUT_CHANCE)

/** Runs a session action as a step in the current generation; undefined when the session is stopped. */
const sessionOp = <A, E>(
  world: World,
  state: SessionState,
  label: string,
  action: (session: IntercomSessionService) => Effect.Effect<A, E>,
  describe: (exit: Exit.Exit<A, E>) => string
): Effect.Effect<Pending<A, E> | undefined> =>
  Effect.gen(function*() {
    const generation = state.generation
    const client = state.client
    if (generation === undefined || client === undefined) {
      world.ledger.note(`${state.meta.name} ${label}: skipped (session stopped)`)
      return undefined
    }
    const fiber = yield* step(
      world,
      Effect.suspend(() => {
        world.ledger.note(`${state.meta.name} ${label}`)
        return action(generation.service)
      }).pipe(
        Effect.onExit((exit) =>
          Effect.sync(() => {
            world.ledger.note(`${state.meta.name} ${label} → ${describe(exit)}`)
            world.ledger.defectOf(`${state.meta.name} ${label}`, exit)
          })
        )
      ),
      generation.ops,
      client.key
    )
    return pending(world, fiber)
  })

/**
 * A cancel or supersede (P71, P72) of the session's `back`-th latest
 * acknowledged send (to `to`, or to anyone; 0 the latest, past the oldest
 * remembered the oldest), through its client as an engine calls it;
 * undefined (noted) when the session is stopped or remembers no such send.
 */
const controlOp = <E>(
  world: World,
  state: SessionState,
  to: string | undefined,
  back: number,
  verb: string,
  action: (client: IntercomClientService, recent: RecentSend) => Effect.Effect<string, E>
): Effect.Effect<Pending<string, E> | undefined> =>
  Effect.gen(function*() {
    const name = state.meta.name
    const client = state.client
    const generation = state.generation
    const mine = to === undefined ? state.sent : state.sent.filter((recent) => recent.to === to)
    const recent = mine[mine.length - 1 - Math.min(back, mine.length - 1)]
    if (client === undefined || generation === undefined || recent === undefined) {
      world.ledger.note(`${name} ${verb} a recent send${to === undefined ? "" : ` to ${to}`}: skipped (${recent === undefined ? "none remembered" : "session stopped"})`)
      return undefined
    }
    const label = `${name} ${verb} ${world.ledger.alias(recent.messageId)} (to ${recent.to})`
    const fiber = yield* step(
      world,
      Effect.suspend(() => {
        world.ledger.note(label)
        return action(client.service, recent)
      }).pipe(
        Effect.onExit((exit) =>
          Effect.sync(() => {
            world.ledger.note(`${label} → ${failureOf(exit, (outcome) => outcome)}`)
            world.ledger.defectOf(label, exit)
          })
        )
      ),
      generation.ops,
      client.key
    )
    return pending(world, fiber)
  })

/** A message text as the trace quotes it: a long one (a `Flood`'s) by its head and length. */
const quoted = (text: string): string =>
  text.length <= 80 ? `"${text}"` : `"${text.slice(0, 40)}…" (${text.length} characters)`

const failureOf = <A, E>(exit: Exit.Exit<A, E>, success: (a: A) => string): string =>
  Exit.isSuccess(exit) ? success(exit.value) : describeFailure(exit.cause)

/** The handle on `state`'s session in `world`. */
export const handleOf = (world: World, state: SessionState): SimSession => {
  const name = state.meta.name
  return {
    name,
    id: state.meta.id,
    scopeId: state.meta.scopeId,
    group: state.meta.group?.trim() || "default",
    running: Effect.sync(() => state.generation !== undefined),
    send: (to, text, options = {}) =>
      sessionOp(
        world,
        state,
        `send ${to} ${quoted(text)}${options.delivery === undefined ? "" : ` (${[options.delivery, options.queueMode, options.threadId].filter((part) => part !== undefined).join(" ")})`}`,
        (session) =>
          Effect.tap(session.send({ to, message: text, ...options }), (sent) =>
            Effect.sync(() => {
              if (sent._tag !== "Sent") return
              state.sent.push({ to, messageId: sent.messageId })
              if (state.sent.length > RECENT_SENDS) state.sent.shift()
            })),
        (exit) =>
          failureOf(exit, (sent) =>
            sent._tag === "Sent" ? `${world.ledger.alias(sent.messageId)} ${sent.delivery}` : "declined")
      ),
    ask: (to, text, options = {}) => {
      let alias = ""
      const asking = sessionOp(
        world,
        state,
        `ask ${to} "${text}"`,
        (session) =>
          Effect.suspend(() => {
            const client = state.client
            alias = world.ledger.askStarted(
              state.meta.id,
              to,
              client === undefined
                ? undefined
                : { key: client.key, rejoinGraceMs: client.service.rejoinGraceMs, livenessTimeoutMs: client.livenessTimeoutMs }
            )
            const timeout = usesSessionDefault(world, alias) ? undefined : options.timeout
            if (timeout === undefined && options.timeout !== undefined) {
              world.ledger.note(`${state.meta.name} ${alias} waits its session's default ask timeout`)
            }
            return session.ask({
              to,
              message: text,
              ...(timeout === undefined ? {} : { timeoutMs: millisOf(timeout) })
            })
          }).pipe(
            Effect.onExit((exit) =>
              Effect.sync(() => {
                if (alias === "") return
                if (Exit.isSuccess(exit)) {
                  const value = exit.value
                  if (value._tag === "Replied") {
                    // The reply is in the asker's history now (pi: the ask tool's result names it).
                    state.journal?.delivered(value.from.id, value.reply.id)
                    world.ledger.askEnded(alias, "Replied", {
                      questionId: value.questionId,
                      fromId: value.from.id,
                      message: value.reply
                    })
                  } else {
                    world.ledger.askEnded(alias, `Sent (${value.delivery})`)
                  }
                } else {
                  // C-ASK-7: a failure reply answers the ask, as an error; the ledger checks it like any reply.
                  const failure = Cause.findErrorOption(exit.cause)
                  if (Option.isSome(failure) && failure.value._tag === "ReplyFailed") {
                    const { fromId, reply } = failure.value
                    state.journal?.delivered(fromId, reply.id)
                    world.ledger.askEnded(alias, "Replied", { questionId: reply.replyTo ?? "", fromId, message: reply })
                  } else {
                    world.ledger.askEnded(alias, failureTag(exit.cause))
                  }
                }
              })
            )
          ),
        (exit) =>
          failureOf(exit, (result) =>
            result._tag === "Replied" ? `replied by ${world.ledger.alias(result.reply.id)}` : `sent, ${result.delivery}`)
      )
      return Effect.tap(asking, (pending) =>
        Effect.sync(() => {
          if (pending === undefined) return
          const fiber: Fiber.Fiber<unknown, unknown> = pending.fiber
          state.asks.add(fiber)
          fiber.addObserver(() => state.asks.delete(fiber))
        }))
    },
    supervisorSend: (text, options = {}) =>
      Effect.gen(function*() {
        const generation = state.generation
        const client = state.client
        const label = `supervisorSend${options.ask === true ? " (ask)" : ""} "${text}"`
        if (generation === undefined || client === undefined) {
          world.ledger.note(`${name} ${label}: skipped (session stopped)`)
          return undefined
        }
        const askTimeoutMs = millisOf(options.timeout ?? "20 seconds")
        const fiber = yield* step(
          world,
          Effect.gen(function*() {
            world.ledger.note(`${name} ${label}`)
            const message = yield* newMessage(text, undefined, { expectsReply: options.ask === true })
            return yield* client.service.supervisorSend(options.ask === true ? { message, askTimeoutMs } : { message })
          }).pipe(
            Effect.onExit((exit) =>
              Effect.sync(() =>
                world.ledger.note(`${name} ${label} → ${failureOf(exit, (delivery) => delivery.delivery)}`)
              )
            )
          ),
          generation.ops,
          client.key
        )
        return pending(world, fiber)
      }),
    answer: (to, questionId, text, options = {}) =>
      Effect.gen(function*() {
        const generation = state.generation
        const client = state.client
        const mode = options.delivery === undefined
          ? ""
          : ` (${[options.delivery, options.queueMode, options.threadId].filter((part) => part !== undefined).join(" ")})`
        const label = `answers ${world.ledger.alias(questionId)} of ${world.ledger.nameOf(to)} through its client "${text}"${mode}`
        if (generation === undefined || client === undefined) {
          world.ledger.note(`${name} ${label}: skipped (session stopped)`)
          return undefined
        }
        const fiber = yield* step(
          world,
          Effect.gen(function*() {
            world.ledger.note(`${name} ${label}`)
            const message = yield* newMessage(text, undefined, { replyTo: questionId })
            const sent = yield* client.service.send({ to, message, ...options })
            return `${world.ledger.alias(message.id)} ${sent.delivery}`
          }).pipe(
            Effect.onExit((exit) => Effect.sync(() => world.ledger.note(`${name} ${label} → ${failureOf(exit, (outcome) => outcome)}`)))
          ),
          generation.ops,
          client.key
        )
        return pending(world, fiber)
      }),
    cancelRecent: (back, to) =>
      controlOp(world, state, to, back, "cancels", (client, recent) =>
        Effect.map(client.cancel(recent.messageId), (cancelled) => cancelled ? "cancelled" : "not cancelled")),
    supersedeRecent: (back, text, to) =>
      controlOp(world, state, to, back, `supersedes with ${quoted(text)}`, (client, recent) =>
        Effect.gen(function*() {
          const message = yield* newMessage(text, undefined, {})
          const delivery = yield* client.send({ to: recent.to, message: { ...message, supersedes: recent.messageId } })
          return `${world.ledger.alias(message.id)} ${delivery.delivery}`
        })),
    cancelAsks: worldStep(
      world,
      `${name} cancels its asks`,
      Effect.suspend(() => Effect.forEach([...state.asks], Fiber.interrupt, { discard: true }))
    ),
    reply: (text, options = {}) =>
      sessionOp(
        world,
        state,
        `reply${options.to === undefined ? "" : ` to ${options.to}`} "${text}"`,
        (session) => session.reply({ message: text, to: options.to, replyTo: options.replyTo }),
        (exit) => failureOf(exit, (sent) => `${world.ledger.alias(sent.messageId)} ${sent.delivery}`)
      ),
    list: sessionOp(
      world,
      state,
      "list",
      (session) => session.list,
      (exit) => failureOf(exit, (list) => `${list.sessions.length} session(s)`)
    ),
    topic: (params) =>
      sessionOp(
        world,
        state,
        `${params.action} ${params.topic ?? ""}`,
        (session) => session.act(params),
        (exit) => failureOf(exit, (result) => result.text.split("\n")[0] ?? "")
      ),
    setStatus: (status) =>
      worldStep(
        world,
        undefined,
        Effect.suspend(() => {
          state.status = status
          world.ledger.note(`${name} is ${status}`)
          return state.generation === undefined ? Effect.void : state.generation.service.setStatus(status)
        })
      ),
    busyFor: (duration) =>
      Effect.gen(function*() {
        const handle = handleOf(world, state)
        yield* handle.setStatus("thinking")
        yield* advance(world, duration)
        yield* handle.setStatus("idle")
      }),
    inbox: Effect.sync(() => state.generation?.agent.inbox ?? []),
    start: lifecycle(
      world,
      state,
      "starts",
      Effect.suspend(() =>
        state.ended
          ? Effect.sync(() => world.ledger.note(`${state.meta.name} start: skipped (an ephemeral session that ended stays gone)`))
          : startSession(world, state)
      )
    ),
    startSlow: (delay, duration) =>
      lifecycle(
        world,
        state,
        "starts, reading slowly",
        Effect.suspend(() => {
          if (state.ended) {
            return Effect.sync(() => world.ledger.note(`${state.meta.name} start: skipped (an ephemeral session that ended stays gone)`))
          }
          // Only for a start that makes a new client (a running session's `start` does nothing).
          const slow: SlowStart | undefined = state.client === undefined
            ? { ms: millisOf(delay), link: undefined, closed: false }
            : undefined
          state.slowStart = slow
          const end = Effect.suspend(() => {
            state.slowStart = undefined
            if (slow === undefined) return Effect.void
            // The driver's fiber, not the client's (which may close first): `duration` after the start, the
            // delay ends, and a first dial later than that is not slowed.
            const reset = Effect.andThen(
              Effect.sleep(duration),
              Effect.sync(() => {
                slow.closed = true
                slow.link?.delay("broker", 0)
              })
            )
            return Effect.asVoid(FiberSet.run(world.steps, reset))
          })
          return Effect.andThen(startSession(world, state), end)
        })
      ),
    stop: lifecycle(world, state, "stops", stopSession(world, state, "stop")),
    unregister: lifecycle(
      world,
      state,
      state.meta.ephemeral === true ? "unregisters (ephemeral: it has ended)" : "unregisters",
      Effect.gen(function*() {
        if (state.client === undefined) return
        yield* stopSession(world, state, "stop")
        if (state.meta.ephemeral === true) state.ended = true
      })
    ),
    unregisterAndResume: lifecycle(
      world,
      state,
      "unregisters, and its client instance registers again",
      Effect.gen(function*() {
        const client = state.client
        if (client === undefined || state.meta.ephemeral === true) {
          world.ledger.note(`${name} unregister and resume: skipped (${client === undefined ? "not running" : "short-lived"})`)
          return
        }
        yield* stopSession(world, state, "stop", true)
        yield* startSession(world, state, client.key)
      })
    ),
    moveGroup: (group) =>
      lifecycle(
        world,
        state,
        `moves to group ${group ?? (state.meta.group?.trim() || "default")}: its process dies and a new one of its client instance registers there`,
        Effect.gen(function*() {
          const client = state.client
          if (client === undefined || state.meta.ephemeral === true) {
            world.ledger.note(`${name} group move: skipped (${client === undefined ? "not running" : "short-lived"})`)
            return
          }
          yield* stopSession(world, state, "kill", true)
          world.ledger.sessionMoved(state.meta.id, group ?? state.meta.group)
          yield* startSession(world, state, client.key, group ?? state.meta.group)
        })
      ),
    kill: lifecycle(world, state, "is killed", stopSession(world, state, "kill")),
    replaceGeneration: lifecycle(
      world,
      state,
      "replaces its generation",
      Effect.gen(function*() {
        const client = state.client
        if (client === undefined) return
        yield* closeGeneration(world, state)
        yield* buildGeneration(world, state, client)
      })
    ),
    drop: (side) =>
      worldStep(
        world,
        `${name}'s connection drops on the ${side} side`,
        Effect.suspend(() => currentLink(state)?.sever(side) ?? Effect.void)
      ),
    stall: (side, duration) =>
      worldStep(
        world,
        `${name}'s ${side} stops reading${duration === undefined ? "" : ` for ${Duration.format(Duration.fromInputUnsafe(duration))}`}`,
        Effect.suspend(() => {
          const link = currentLink(state)
          if (link === undefined) return Effect.void
          link.stall(side)
          if (duration === undefined) return Effect.void
          return Effect.asVoid(FiberSet.run(world.steps, Effect.andThen(Effect.sleep(duration), Effect.sync(() => link.resume(side)))))
        })
      ),
    resume: (side) =>
      worldStep(world, `${name}'s ${side} reads again`, Effect.sync(() => currentLink(state)?.resume(side))),
    delayWrites: (side, delay, duration) =>
      worldStep(
        world,
        `${name}'s ${side} writes take ${Duration.format(Duration.fromInputUnsafe(delay))}`,
        Effect.suspend(() => {
          const link = currentLink(state)
          if (link === undefined) return Effect.void
          link.delay(side, millisOf(delay))
          if (duration === undefined) return Effect.void
          return Effect.asVoid(FiberSet.run(world.steps, Effect.andThen(Effect.sleep(duration), Effect.sync(() => link.delay(side, 0)))))
        })
      )
  }
}

/** The tag of an ask's failure, for the tallies. */
const failureTag = <E>(cause: Parameters<typeof describeFailure<E>>[0]): string => {
  const text = describeFailure(cause)
  const space = text.indexOf(" ")
  return space < 0 ? text : text.slice(0, space)
}
