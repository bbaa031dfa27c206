/**
 * Peer health on the client side (extension `health-v1`): which `presence`
 * fields are health fields, how a presence update is cut down for a broker
 * that did not grant the extension, and the health this client last published
 * (re-sent after a reconnect, C-BRK-28, since `register` has no health fields).
 */
import { HEALTH_V1 } from "../protocol/features.ts"
import type { PresenceUpdate } from "./models.ts"

/** The health fields of a presence update (C-HLT-3, C-HLT-8). */
export interface HealthFields {
  readonly acceptsAsks?: boolean
  readonly pendingAsks?: number
  readonly lastIntercomActivity?: number
}

/** The health fields `update` sets, or undefined when it sets none. */
export const healthOf = (update: PresenceUpdate): HealthFields | undefined =>
  update.acceptsAsks === undefined && update.pendingAsks === undefined && update.lastIntercomActivity === undefined
    ? undefined
    : {
      ...(update.acceptsAsks === undefined ? {} : { acceptsAsks: update.acceptsAsks }),
      ...(update.pendingAsks === undefined ? {} : { pendingAsks: update.pendingAsks }),
      ...(update.lastIntercomActivity === undefined ? {} : { lastIntercomActivity: update.lastIntercomActivity })
    }

/** `previous` with the fields `next` sets replaced. */
export const mergeHealth = (previous: HealthFields | undefined, next: HealthFields | undefined): HealthFields | undefined =>
  next === undefined ? previous : { ...previous, ...next }

/**
 * The `presence` frame for `update`: health fields go out only to a broker
 * that granted `health-v1`, so a base broker sees exactly the base frame.
 */
export const presenceFrame = (update: PresenceUpdate, granted: ReadonlySet<string>): object => {
  if (granted.has(HEALTH_V1)) return { type: "presence", ...update }
  const { acceptsAsks: _a, lastIntercomActivity: _l, pendingAsks: _p, ...base } = update
  return { type: "presence", ...base }
}
