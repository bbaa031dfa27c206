/**
 * What an `IntercomClient` is made with: where the broker is, who this
 * session is, how to start a broker, and its timings (with their defaults);
 * and the check of what the client itself cannot send as given
 * (`checkClientOptions`), which `IntercomClient.make` runs first — as the
 * broker's options are checked in broker/options.ts — so that a value the
 * broker would refuse at every connect is named once, up front.
 */
import * as Effect from "effect/Effect"
import { MAX_ID_LENGTH } from "../protocol/limits.ts"
import { IntercomOptionError } from "./errors.ts"
import type { SessionRegistration } from "../protocol/frames.ts"
import type { Dialer } from "./Dialer.ts"
import type { ChildGrant } from "./SupervisorGrants.ts"
import type { BrokerLaunch } from "./spawn.ts"

/**
 * The options of `IntercomClient.make` and `IntercomClient.layer`. The paths,
 * scope, launch and timeouts normally come from `loadIntercomSettings()`
 * (`effect-intercom/config`); docs/client.md lists every option and default.
 */
export interface IntercomClientOptions {
  /** The agent dir a spawned broker serves (its `--dir`, and `PI_CODING_AGENT_DIR`). */
  readonly agentDir: string
  /** `<agentDir>/intercom`: where auto-spawn finds `broker.pid` and keeps its lock and `broker.log`. */
  readonly intercomDir: string
  /** Where to dial: `settings.paths.socketPath` (an address of the in-memory network with `dial`). */
  readonly socketPath: string
  /** The stable session id this client registers (and re-registers) with. */
  readonly sessionId: string
  /** pi-intercom routing scope (P17); unscoped when absent. */
  readonly scopeId?: string | undefined
  /**
   * The session's home group (C-GRP-2: a launching program injects it; see
   * config's `group` and `ATOMIC_INTERCOM_GROUP` for the rest). Blank or
   * absent: `default`.
   */
  readonly group?: string | undefined
  /**
   * A short-lived session, one that ends with its command (`ephemeral-v1`):
   * once it leaves, the broker forgets it, so nothing sent to its name or id
   * afterwards is queued for it, and no later session of the same name and
   * directory inherits mail meant for it. The CLI's one-shot commands
   * (`send`, `list`, `ask`, …) register so; a session people address by name
   * (pi's, `intercom watch`) must not. Default false.
   */
  readonly ephemeral?: boolean | undefined
  /** What the session says about itself; `presence` updates are folded in for re-registration. */
  readonly registration: SessionRegistration
  /**
   * `supervisor-v1`, supervisor side: a private token (a random secret, kept
   * for the session's life). With it the client may `authorizeChild`; the
   * broker signs capabilities with it, so the same token must be used after
   * a reconnect for them to be restored.
   */
  readonly ownerToken?: string | undefined
  /**
   * `supervisor-v1`, supervisor side: capabilities an earlier process of
   * this session obtained for its children (the `ChildGrant`s
   * `authorizeChild` returned, which an engine keeps with the children it
   * launched). The client restores them on every connection, with the ones
   * it obtains itself (C-SUP-15), so children still running when the
   * supervisor's process restarted can register again: the broker forgets a
   * supervisor's capabilities when its session leaves. They check only
   * against the same `ownerToken` and session id; one the broker refuses is
   * dropped and named in `status.lastError`.
   */
  readonly issuedGrants?: ReadonlyArray<ChildGrant> | undefined
  /**
   * `received-v1`: confirm only what the consumer of `messages` has handled
   * (`handled`), from the first connection on — what `confirmWhenHandled`
   * turns on later. For a client an `IntercomSession` will consume: without
   * it, mail the broker flushes before the session's first generation starts
   * is confirmed as it is read. Default false (confirm what was read).
   */
  readonly confirmWhenHandled?: boolean | undefined
  /**
   * `received-v1`: confirm nothing read, handled or not, until
   * `releaseConfirmations`. For a consumer whose journal is not durable yet
   * (a pi session whose file pi has not written yet): the broker keeps all
   * of it, so a process that ends first leaves it to the session's next
   * client. Default false.
   */
  readonly withholdConfirmations?: boolean | undefined
  /**
   * With `withholdConfirmations`: at most this many messages stay withheld.
   * The first message read past it ends the withholding as
   * `releaseConfirmations` does — it and everything read before it are
   * confirmed, and `withheld` reports `limitReleased` — so what the client
   * and the broker hold unconfirmed is bounded, at the cost of confirming
   * mail the consumer's journal does not hold durably yet. A positive
   * integer; default no limit.
   */
  readonly withholdLimit?: number | undefined
  /**
   * `supervisor-v1`, child side: the grant its supervisor obtained for it
   * (`readChildBridge(process.env).grant`). The broker then binds this session
   * to that supervisor, or refuses the registration.
   */
  readonly supervisorGrant?: { readonly capability: string; readonly supervisorSessionId: string } | undefined
  /** Protocol extensions to request in `register`. */
  readonly features?: ReadonlyArray<string>
  /** How to start a broker when none answers; `false` never spawns. */
  readonly launch: BrokerLaunch | false
  /** How long one dial and registration may take, and how long an operation waits for a connection. Default 10 s. */
  readonly connectTimeoutMs?: number
  /** How long `send` and `cancel` wait for the broker's answer. Default 10 s. */
  readonly sendTimeoutMs?: number
  /** How long `list` waits. Default 5 s. */
  readonly listTimeoutMs?: number
  /** How often a registered client probes the broker with a `list` (P96). Default 30 s. */
  readonly livenessIntervalMs?: number
  /** How long that probe may take before the socket is dropped; at most the interval. Default 5 s. */
  readonly livenessTimeoutMs?: number
  /**
   * After a takeover (another process registered this session id, and the
   * broker said so: `takeover-v1`) the client does not reconnect until the
   * other holder has left (it asks for the id only if free); meanwhile its
   * operations fail with `IntercomNotConnected` whose reason ends with this
   * sentence, saying how to take the id back. Default: `Connect a new
   * client with this session id to take it back.`
   */
  readonly takenOverHint?: string
  /** Reconnect backoff: starts here, doubles, capped at `reconnectMaxMs`. Defaults 1 s and 30 s. */
  readonly reconnectBaseMs?: number
  /** The longest delay between reconnect attempts. */
  readonly reconnectMaxMs?: number
  /**
   * Asked before each attempt the client makes by itself — a reconnect after
   * a drop, a take-back after a takeover — before it dials or spawns a
   * broker. `false` ends the reconnecting: the client stays off (its
   * operations fail with `IntercomNotConnected`, reason
   * `RECONNECT_DECLINED`) until it is closed. For an owner that can tell its
   * session is gone before it closes the client (the pi extension: a session
   * its SDK disposed). Not asked for the first connection, which an
   * operation asks for. Default: always `true`.
   */
  readonly shouldReconnect?: Effect.Effect<boolean>
  /**
   * For this long after a reconnect, a send whose target is not found, or a
   * reply whose ask is not pending, is retried (same message id, after 25,
   * 50, 100, 200, then every 250 ms) instead of failing: after a broker
   * restart its target (or asker) may simply not be back yet. A send lost
   * with a connection on the way is retried so too on every refusal
   * afterLoss.ts classes `retried` ("target disconnected", an ambiguous
   * target, …: the next broker's state now), and ends `ConnectionLost` if it
   * stands. Once the grace is over, the client reconciles its membership
   * view with a `list` (`presenceEvents`, MembershipView.ts). Default 10 s.
   */
  readonly rejoinGraceMs?: number
  /**
   * This client instance's id (`rejoin-v1`), sent in every `register` it
   * makes, so the broker tells the client's own reconnect (the old
   * connection left before the broker saw it end) from another process
   * taking the id over, and gives the new connection what the old one was
   * given and never confirmed, in order. Unique per instance; a random UUID
   * by default (the simulation passes its own, deterministic). An empty
   * string counts as not given (a random UUID): the broker refuses `""`,
   * which would make every client that sends it one instance. At most 256
   * characters: the broker would refuse a longer one at every connect, so
   * `IntercomClient.make` fails with `IntercomOptionError` instead.
   */
  readonly instanceId?: string
  /** Transport override (the simulation's in-memory network); the Unix socket by default. */
  readonly dial?: Dialer
}


/**
 * Fails with the first option of `options` the client cannot use as given
 * (`IntercomOptionError`, naming it, what it allows, the value and what to
 * do); succeeds with nothing otherwise. Checked: `instanceId`, at most
 * `MAX_ID_LENGTH` (256) characters — the broker takes a longer `register`
 * for garbage and closes the connection, so every connect would fail.
 * `IntercomClient.make` runs it before anything else.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { checkClientOptions } from "effect-intercom/client"
 *
 * const checked = checkClientOptions({
 *   agentDir: "/tmp/agent",
 *   intercomDir: "/tmp/agent/intercom",
 *   socketPath: "/tmp/agent/intercom/broker.sock",
 *   sessionId: "planner",
 *   registration: { cwd: "/tmp", model: "m", pid: 1, startedAt: 0, lastActivity: 0 },
 *   launch: false,
 *   instanceId: "x".repeat(300)
 * })
 * // Effect.flip(checked) succeeds with an IntercomOptionError:
 * // "IntercomClient option instanceId must be at most 256 characters, got one of 300 characters. …"
 * ```
 */
export const checkClientOptions = (options: IntercomClientOptions): Effect.Effect<void, IntercomOptionError> => {
  const instanceId = options.instanceId
  if (instanceId !== undefined && instanceId.length > MAX_ID_LENGTH) {
    return Effect.fail(
      new IntercomOptionError({
        option: "instanceId",
        allowed: `at most ${MAX_ID_LENGTH} characters`,
        value: `one of ${instanceId.length} characters`,
        hint:
          "The broker refuses a longer one at every connect. Pass a shorter id that is unique to this client (a UUID), or leave instanceId out for a random one."
      })
    )
  }
  return Effect.void
}
