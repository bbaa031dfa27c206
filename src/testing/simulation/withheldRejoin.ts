/**
 * Clients without `rejoin-v1` in a simulated world (`--withhold-rejoin`):
 * which clients go without it (`withholdsRejoin`, a draw of its own per
 * client) and the connection such a client's dialer hands it
 * (`withoutRejoin`), whose `register` frames carry neither `rejoin-v1` in
 * `features` nor an `instanceId` — what an older client writes.
 *
 * Why: every `IntercomClient` asks for `rejoin-v1`, so without this a sweep
 * never reaches the broker's path for a takeover by a client that cannot
 * rejoin (its own reconnect while the broker still holds its old connection
 * is then a takeover: known issue 22, `takeover-late-write`), which the
 * ledger tolerates for such clients only (ledger/order.ts). The rewrite is
 * the simulation's: the client itself is the real one, unchanged; the broker
 * and the ledger both see the frame as rewritten.
 */
import type { OutFrame } from "../../protocol/framing.ts"
import { REJOIN_V1 } from "../../protocol/features.ts"
import type { Connection } from "../../transport/Connection.ts"
import { Prng } from "../Prng.ts"

/** Of the clients a `--withhold-rejoin` world starts, the share that registers without `rejoin-v1`. */
export const WITHHELD_REJOIN_SHARE = 0.5

/**
 * Whether client `clientKey` (`A/c2`) of a world with seed `seed` registers
 * without `rejoin-v1`: drawn from a PRNG stream of its own, so that turning
 * the option on changes no other draw of the world.
 */
export const withholdsRejoin = (seed: number, clientKey: string): boolean =>
  Prng.derive(seed, `${clientKey}/withhold-rejoin`).chance(WITHHELD_REJOIN_SHARE)

const REGISTER_PREFIX = `{"type":"register"`

/** `frame` as a client without `rejoin-v1` writes it: a `register` without the feature and the `instanceId`. */
const withoutRejoinFrame = (frame: OutFrame): OutFrame => {
  if (typeof frame !== "string" || !frame.startsWith(REGISTER_PREFIX)) return frame
  const parsed: unknown = JSON.parse(frame)
  if (typeof parsed !== "object" || parsed === null) return frame
  const fields: Array<[string, unknown]> = []
  for (const [key, value] of Object.entries(parsed)) {
    if (key === "instanceId") continue
    fields.push([key, key === "features" && Array.isArray(value) ? value.filter((feature) => feature !== REJOIN_V1) : value])
  }
  return JSON.stringify(Object.fromEntries(fields))
}

/** `connection` with every `register` frame its client writes rewritten as a client without `rejoin-v1` writes it. */
export const withoutRejoin = (connection: Connection): Connection => {
  const rewritten: Connection = {
    ...connection,
    write: (frames) => connection.write(frames.map(withoutRejoinFrame)),
    writeAll: (frames) => connection.writeAll(frames.map(withoutRejoinFrame))
  }
  return rewritten
}
