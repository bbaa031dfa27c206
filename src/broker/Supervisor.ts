/**
 * The supervisor channel (extension `supervisor-v1`, C-SUP-8…15, C-GRP-12):
 * the one kind of traffic that crosses groups, and only as the broker checked
 * it.
 *
 * - A **supervisor** registers with a private `ownerToken` and asks for a
 *   capability per child name (`authorize_supervisor`, Capabilities.ts). It
 *   may restore one it issued before (a broker restart forgets them): the
 *   broker rebinds it only if the HMAC checks against its token.
 * - A **child** registers with `capability` and `supervisorSessionId`; it is
 *   accepted only if the capability is held, bound to its trimmed name (`*`
 *   binds to the first name), and its issuer is registered right now with
 *   the same token. Otherwise `registration_failed "Invalid supervisor
 *   authorization"`, and the connection ends.
 * - The child reaches its supervisor with `supervisor_send`, routed here (a
 *   `SendRoute`): the supervisor gets it with `channel: "supervisor"`, and
 *   the broker records the crossing (message id, child, supervisor).
 * - A plain `send` from the supervisor with `replyTo` may go back across
 *   groups (`reroute`) only along a recorded crossing — to the child that
 *   sent that message, within CROSSING_TTL_MS — or along the child's ask
 *   that is still open.
 *
 * It owns the owner tokens of live sessions, the capability store, the
 * children's bindings and the crossing records, all written only here.
 */
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import { DeliveryCode, ErrorText, Reason } from "../protocol/delivery.ts"
import { SUPERVISOR_V1 } from "../protocol/features.ts"
import type { Message, RegisterFrame } from "../protocol/frames.ts"
import { AgedMap } from "./AgedMap.ts"
import {
  type Capability,
  capabilityChecks,
  CapabilityStore,
  issueCapability,
  MAX_CAPABILITIES,
  MAX_CAPABILITIES_PER_SUPERVISOR,
  tokenFingerprint,
  WILDCARD_CHILD
} from "./Capabilities.ts"
import * as Encode from "./encode.ts"
import type { Peer } from "./Peer.ts"
import type { Admission, RegistrationHooks } from "./Registration.ts"
import { type Session, spaceKeyOf } from "./Registry.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"
import type { Send } from "./Send.ts"
import type { Resolution, SendAttempt, SendRoute, SendStage } from "./SendStage.ts"

/** How long a supervisor may reply back across groups to a child's message (C-SUP-14). */
export const CROSSING_TTL_MS = 600_000

/** Crossings remembered at most; the oldest are forgotten first (C-SUP-14). */
export const MAX_CROSSINGS = 10_000

/** A supervisor's owner token, as the broker keeps it for a live session. */
interface Owner {
  readonly token: string
  readonly fingerprint: string
}

/** A child's relationship to its supervisor, confirmed at registration. */
interface Binding {
  readonly supervisorKey: string
  readonly supervisorId: string
  /** The supervisor's token fingerprint when the capability was issued: a session that took its id without it is not it. */
  readonly fingerprint: string
}

/** What a registration brought, between `admit` and `registered`. */
interface Admitted {
  readonly owner: Owner | undefined
  readonly binding: Binding | undefined
}

/** A recorded supervisor crossing: the child's message to its supervisor. */
interface Crossing {
  readonly childKey: string
  readonly fingerprint: string
}

const crossingKey = (supervisorKey: string, childId: string, messageId: string) =>
  `${supervisorKey}\u0000${childId}\u0000${messageId}`

/** The `authorize_supervisor` refusals. */
export const AuthorizationText = {
  noToken:
    "Invalid authorize_supervisor: this session registered without an ownerToken; only a supervisor (extension supervisor-v1, with ownerToken) can authorize children",
  emptyName: "Invalid authorize_supervisor: childName is empty",
  badCapability: "Invalid authorize_supervisor: the capability does not check against this session's owner token and child name",
  otherRelationship: "Invalid authorize_supervisor: the capability is bound to another supervisor relationship",
  tooMany: (max: number) =>
    `This supervisor holds ${max} capabilities, as many as it may; launch fewer children at once or reconnect to start afresh`,
  full: "The broker holds as many supervisor capabilities as it can; try again later"
} as const

/** The supervisor-channel concern: registration hooks, two frames, a send route and a send stage. */
export class Supervisor {
  private readonly ctx: RouterContext
  private readonly send: Send
  /** Whether the child `childKey`'s ask `messageId` to `supervisorKey` is still open (Asks.ts). */
  private readonly askOpen: (childKey: string, messageId: string, supervisorKey: string) => boolean
  private readonly owners = new Map<Session, Owner>()
  private readonly bindings = new Map<Session, Binding>()
  /** Bound children by supervisor key and child id, for replies along open asks. */
  private readonly children = new Map<string, Map<string, Session>>()
  private readonly admitted = new Map<Peer, Admitted>()
  private readonly capabilities = new CapabilityStore()
  /**
   * The name each `*` capability was bound to (C-SUP-10), kept when its
   * issuer leaves and its capabilities go: a restore after a reconnect binds
   * it to that name again instead of to whichever name claims it next. At
   * most MAX_CAPABILITIES, the oldest forgotten first.
   */
  private readonly wildcardNames = new Map<string, string>()
  private readonly crossings = new AgedMap<string, Crossing>(MAX_CROSSINGS)

  constructor(
    ctx: RouterContext,
    send: Send,
    askOpen: (childKey: string, messageId: string, supervisorKey: string) => boolean
  ) {
    this.ctx = ctx
    this.send = send
    this.askOpen = askOpen
  }

  readonly hooks: RegistrationHooks = {
    admit: (peer, frame, features) => this.admit(peer, frame, features),
    registered: (session, previous) => {
      if (previous !== undefined) this.forget(previous, session)
      const admitted = this.admitted.get(session.peer)
      this.admitted.delete(session.peer)
      if (admitted?.owner !== undefined) this.owners.set(session, admitted.owner)
      if (admitted?.binding !== undefined) this.bind(session, admitted.binding)
    },
    left: (session) => this.forget(session, undefined)
  }

  /** Supervisor frames from a connection not granted `supervisor-v1` are protocol errors: a base client never sends them. */
  readonly frames: FrameHandlers = {
    authorize_supervisor: {
      handle: (peer, raw) =>
        peer.features.has(SUPERVISOR_V1) ? this.onAuthorize(peer, raw) : this.withoutExtension(peer, "authorize_supervisor")
    },
    supervisor_send: {
      handle: (peer, frame) =>
        peer.features.has(SUPERVISOR_V1)
          ? this.send.handle(peer, frame, this.route)
          : this.withoutExtension(peer, "supervisor_send")
    }
  }

  private withoutExtension(peer: Peer, type: string): void {
    this.ctx.protocolError(peer, `"${type}" frame without the ${SUPERVISOR_V1} extension`)
  }

  /** `supervisor_send`: to the bound supervisor only, marked as supervisor traffic, the crossing recorded. */
  readonly route: SendRoute = {
    channel: "supervisor",
    resolve: (sender, to) => this.resolveSupervisor(sender, to),
    accepted: (attempt: SendAttempt, target: Session) => {
      const binding = this.bindings.get(attempt.sender)
      if (binding === undefined) return
      this.crossings.set(
        crossingKey(target.key, attempt.sender.id, attempt.message.id),
        { childKey: attempt.sender.key, fingerprint: binding.fingerprint },
        attempt.now
      )
    }
  }

  /** C-SUP-14: a supervisor's reply goes back across groups only along a crossing or an open ask. */
  readonly stage: SendStage = {
    reroute: (sender, to, message, now) => this.reverseTarget(sender, to, message, now)
  }

  /** The registry key of `child`'s supervisor, when it registered as a child (the result archive's readers). */
  supervisorKeyOf(child: Session): string | undefined {
    return this.bindings.get(child)?.supervisorKey
  }

  /** The supervisor a bound child was admitted with (its id and registry key), undefined for any other session. */
  supervisorOf(session: Session): { readonly id: string; readonly key: string } | undefined {
    const binding = this.bindings.get(session)
    return binding === undefined ? undefined : { id: binding.supervisorId, key: binding.supervisorKey }
  }

  /** Forgets crossings older than CROSSING_TTL_MS. */
  prune(now: number): void {
    this.crossings.expire(now - CROSSING_TTL_MS)
  }

  /** Capabilities held, crossings remembered: for stats and tests. */
  get sizes(): { readonly capabilities: number; readonly crossings: number } {
    return { capabilities: this.capabilities.size, crossings: this.crossings.size }
  }

  private admit(peer: Peer, frame: RegisterFrame, features: ReadonlyArray<string>): Admission | undefined {
    this.admitted.delete(peer)
    if (!features.includes(SUPERVISOR_V1)) return undefined
    const token = frame.ownerToken
    const owner = token === undefined || token === "" ? undefined : { token, fingerprint: tokenFingerprint(token) }
    if (frame.capability === undefined && frame.supervisorSessionId === undefined) {
      if (owner !== undefined) this.admitted.set(peer, { owner, binding: undefined })
      return undefined
    }
    const binding = this.checkChild(frame)
    if (binding === undefined) return { refused: ErrorText.invalidSupervisorAuthorization }
    this.admitted.set(peer, { owner, binding })
    return { supervisorSessionId: binding.supervisorId }
  }

  /**
   * C-SUP-9/10: the child's capability is held, bound to its name, and its
   * issuer is here now with the same token, in the child's scope: the channel
   * crosses groups, never scopes (P17).
   */
  private checkChild(frame: RegisterFrame): Binding | undefined {
    const held = frame.capability === undefined ? undefined : this.capabilities.get(frame.capability)
    if (held === undefined || frame.supervisorSessionId?.trim() !== held.issuerId) return undefined
    const name = frame.session.name?.trim() ?? ""
    if (name === "") return undefined
    if (held.boundName !== undefined && held.boundName !== name) return undefined
    const issuer = this.ctx.registry.byKey.get(held.issuerKey)
    if (issuer === undefined || this.owners.get(issuer)?.fingerprint !== held.fingerprint) return undefined
    if (issuer.scopeKey !== spaceKeyOf(frame.scopeId)) return undefined
    if (held.boundName === undefined) {
      held.boundName = name // `*` binds to the first name that claims it
      this.wildcardNames.set(held.capability, name)
      if (this.wildcardNames.size > MAX_CAPABILITIES) {
        const oldest = this.wildcardNames.keys().next()
        if (oldest.done !== true) this.wildcardNames.delete(oldest.value)
      }
    }
    return { supervisorKey: held.issuerKey, supervisorId: held.issuerId, fingerprint: held.fingerprint }
  }

  private bind(child: Session, binding: Binding): void {
    this.bindings.set(child, binding)
    let own = this.children.get(binding.supervisorKey)
    if (own === undefined) this.children.set(binding.supervisorKey, own = new Map())
    own.set(child.id, child)
  }

  /** `session` left, or `next` took its id over: its token, binding and (if the token changed) capabilities go. */
  private forget(session: Session, next: Session | undefined): void {
    const owner = this.owners.get(session)
    this.owners.delete(session)
    const nextOwner = next === undefined ? undefined : this.admitted.get(next.peer)?.owner
    if (owner !== undefined && nextOwner?.fingerprint !== owner.fingerprint) this.capabilities.dropIssuer(session.key)
    const binding = this.bindings.get(session)
    if (binding === undefined) return
    this.bindings.delete(session)
    const own = this.children.get(binding.supervisorKey)
    if (own?.get(session.id) === session) own.delete(session.id)
    if (own?.size === 0) this.children.delete(binding.supervisorKey)
  }

  /** C-SUP-12: a `supervisor_send` goes to the bound supervisor, if it is here with the same token. */
  private resolveSupervisor(sender: Session, to: string): Resolution {
    const binding = this.bindings.get(sender)
    if (binding === undefined) {
      return { refused: { code: DeliveryCode.SupervisorUnauthorized, reason: Reason.supervisorUnauthorized }, id: undefined }
    }
    if (to.trim() !== binding.supervisorId) {
      return { refused: { code: DeliveryCode.SupervisorTarget, reason: Reason.supervisorTarget }, id: undefined }
    }
    const supervisor = this.ctx.registry.byKey.get(binding.supervisorKey)
    if (supervisor === undefined || this.owners.get(supervisor)?.fingerprint !== binding.fingerprint) {
      return { refused: { code: DeliveryCode.TargetDisconnected, reason: Reason.supervisorAway }, id: binding.supervisorId }
    }
    return { target: supervisor, remembered: undefined, id: supervisor.id }
  }

  /** The child a supervisor's reply may cross back to: along a recorded crossing, or the child's open ask. */
  private reverseTarget(sender: Session, to: string, message: Message, now: number): Session | undefined {
    const replyTo = message.replyTo
    const owner = this.owners.get(sender)
    if (replyTo === undefined || owner === undefined) return undefined
    const childId = to.trim()
    const key = crossingKey(sender.key, childId, replyTo)
    const crossing = this.crossings.get(key)
    const recordedAt = this.crossings.setAt(key)
    if (
      crossing !== undefined && recordedAt !== undefined && now - recordedAt < CROSSING_TTL_MS &&
      crossing.fingerprint === owner.fingerprint
    ) {
      return this.ctx.registry.byKey.get(crossing.childKey)
    }
    // An ask waits longer than a crossing is kept: its open edge is the crossing's proof.
    const child = this.children.get(sender.key)?.get(childId)
    if (child === undefined || this.bindings.get(child)?.fingerprint !== owner.fingerprint) return undefined
    return this.askOpen(child.key, replyTo, sender.key) ? child : undefined
  }

  private onAuthorize(peer: Peer, raw: unknown): void {
    const frame = decodeClientFrame.authorize_supervisor(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(peer, frame.message)
    const session = peer.session
    if (session === undefined) return
    const fail = (reason: string) =>
      this.ctx.output.enqueue(peer, Encode.supervisorAuthorizationFailedFrame(frame.requestId, reason))
    const owner = this.owners.get(session)
    if (owner === undefined) return fail(AuthorizationText.noToken)
    const childName = frame.childName.trim()
    if (childName === "") return fail(AuthorizationText.emptyName)
    const held = frame.capability === undefined ? undefined : this.capabilities.get(frame.capability)
    if (held !== undefined) {
      // C-SUP-15: restoring one the broker still holds, by its issuer, is a no-op; by anyone else, an error.
      if (held.issuerKey !== session.key || held.childName !== childName || held.fingerprint !== owner.fingerprint) {
        return fail(AuthorizationText.otherRelationship)
      }
      return this.ctx.output.enqueue(peer, Encode.supervisorAuthorizedFrame(frame.requestId, childName, held.capability))
    }
    if (frame.capability !== undefined && !capabilityChecks(owner.token, childName, frame.capability)) {
      return fail(AuthorizationText.badCapability)
    }
    if (this.capabilities.countOf(session.key) >= MAX_CAPABILITIES_PER_SUPERVISOR) {
      return fail(AuthorizationText.tooMany(MAX_CAPABILITIES_PER_SUPERVISOR))
    }
    if (this.capabilities.size >= MAX_CAPABILITIES) return fail(AuthorizationText.full)
    const issued = frame.capability ?? issueCapability(owner.token, childName)
    const capability: Capability = {
      capability: issued,
      childName,
      // A restored `*` capability keeps the name it was bound to before its issuer left (C-SUP-10).
      boundName: childName === WILDCARD_CHILD ? this.wildcardNames.get(issued) : childName,
      issuerKey: session.key,
      issuerId: session.id,
      fingerprint: owner.fingerprint
    }
    this.capabilities.add(capability)
    this.ctx.output.enqueue(peer, Encode.supervisorAuthorizedFrame(frame.requestId, childName, capability.capability))
  }
}
