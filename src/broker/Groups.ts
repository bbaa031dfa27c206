/**
 * Groups (extension `groups-v1`, C-GRP-1…7): an authorization boundary inside
 * a scope. A group is a routing namespace of its own (`groupSpaceKey`), so
 * names, prefixes, `list`, membership frames and the mailbox already stay
 * inside it; this module adds what a namespace alone does not:
 *
 * - a send to a live session of *another* group of the scope, even by its
 *   exact id, is refused as such (`E_CROSS_GROUP`, "Target session is in a
 *   different intercom group") rather than "not found" (C-GRP-3);
 * - one id is one live session per scope: registering an id that is live in
 *   another group of the scope takes it over there (the old one leaves, told
 *   `taken_over` first where it was granted `takeover-v1`, as a takeover in
 *   its own group is), and a register that asks for the id only if free
 *   (`ifFree`, `ifReleased`) finds it held (`liveElsewhere`).
 *
 * It owns one index — live sessions of each scope by id, across groups —
 * kept up to date through registration hooks.
 */
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import { GROUPS_V1 } from "../protocol/features.ts"
import { SetIndex } from "./Indexes.ts"
import type { RegistrationHooks } from "./Registration.ts"
import type { Session } from "./Registry.ts"
import { endTakenOver, type RouterContext } from "./RouterContext.ts"
import type { SendStage } from "./SendStage.ts"

const scopedIdOf = (scopeKey: string, id: string) => `${scopeKey}\u0000${id}`

/** The groups concern: its registration hooks and its send stage. */
export class Groups {
  /** Live sessions by scope and id, whatever their group. */
  private readonly byScopedId = new SetIndex<string, Session>()

  private readonly ctx: RouterContext

  constructor(ctx: RouterContext) {
    this.ctx = ctx
  }

  /**
   * The live session holding `id` in the scope of `scopeKey`, in whichever
   * group: a registration takes the id over across groups, so there is at
   * most one, but for the moment a takeover is under way (then the newest).
   */
  liveHolder(scopeKey: string, id: string): Session | undefined {
    const live = this.byScopedId.get(scopedIdOf(scopeKey, id))
    if (live === undefined) return undefined
    let holder: Session | undefined
    for (const session of live) holder = session
    return holder
  }

  readonly hooks: RegistrationHooks = {
    liveElsewhere: (scopeKey, spaceKey, id) => {
      const live = this.byScopedId.get(scopedIdOf(scopeKey, id))
      if (live === undefined) return []
      const elsewhere: Array<Session> = []
      for (const other of live) if (other.space.key !== spaceKey) elsewhere.push(other)
      return elsewhere
    },
    registered: (session, previous) => {
      const key = scopedIdOf(session.scopeKey, session.id)
      // The same id live in another group: this registration takes it over (it leaves there), and
      // tells it so: a client told nothing reconnects, and the two take the id from each other for ever.
      for (const other of this.byScopedId.get(key) ?? []) {
        if (other !== session && other !== previous && other.space !== session.space) {
          endTakenOver(this.ctx.output, other.peer, other.key, other.id, session.fields.pid)
        }
      }
      if (previous !== undefined) this.byScopedId.delete(key, previous)
      this.byScopedId.add(key, session)
    },
    left: (session) => this.byScopedId.delete(scopedIdOf(session.scopeKey, session.id), session)
  }

  /**
   * C-GRP-3: an exact id of a live session in another group is refused as
   * crossing groups — to a sender granted `groups-v1`. A base client sees
   * nothing of groups: for it such an id is not found, as any other.
   */
  readonly stage: SendStage = {
    unresolved: (sender, to) => {
      if (!sender.peer.features.has(GROUPS_V1)) return undefined
      for (const other of this.byScopedId.get(scopedIdOf(sender.scopeKey, to)) ?? []) {
        if (other.space !== sender.space) return { code: DeliveryCode.CrossGroup, reason: Reason.crossGroup }
      }
      return undefined
    }
  }
}
