/**
 * Supervisor capabilities (extension `supervisor-v1`, C-SUP-8…10, C-SUP-15):
 * how one is made and checked, and the store of those the broker issued.
 *
 * A capability is `<nonce>.<HMAC-SHA256(ownerToken, nonce + "\0" + childName)>`
 * (base64url). Only a session that knows the owner token can make one, or
 * prove that it made one — which is how a supervisor restores its
 * capabilities after a broker restart (the broker forgets them; the HMAC
 * still checks).
 *
 * The store is owned by `Supervisor` (Supervisor.ts): a capability lives while
 * the session that issued it is registered, at most
 * MAX_CAPABILITIES_PER_SUPERVISOR per supervisor and MAX_CAPABILITIES in all.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto"

/** The child name that binds to the first name that claims it (C-SUP-10). */
export const WILDCARD_CHILD = "*"

/** Capabilities one supervisor may hold at once. */
export const MAX_CAPABILITIES_PER_SUPERVISOR = 4096

/** Capabilities the broker holds at once, over all supervisors. */
export const MAX_CAPABILITIES = 262_144

/** A token's fingerprint: what the broker compares, so that tokens are not compared directly. */
export const tokenFingerprint = (token: string): string => createHash("sha256").update(token).digest("base64url")

const macOf = (token: string, nonce: string, childName: string): string =>
  createHmac("sha256", token).update(`${nonce}\u0000${childName}`).digest("base64url")

/** A new capability for `childName`, signed with `token`. */
export const issueCapability = (token: string, childName: string): string => {
  const nonce = randomBytes(18).toString("base64url")
  return `${nonce}.${macOf(token, nonce, childName)}`
}

/** Whether `capability` was made with `token` for `childName` (compared in constant time). */
export const capabilityChecks = (token: string, childName: string, capability: string): boolean => {
  const dot = capability.indexOf(".")
  if (dot <= 0) return false
  const given = Buffer.from(capability.slice(dot + 1))
  const expected = Buffer.from(macOf(token, capability.slice(0, dot), childName))
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/** One capability the broker issued (or had restored). */
export interface Capability {
  readonly capability: string
  /** The name it was issued for; `*` binds on first claim. */
  readonly childName: string
  /** The child name it is bound to: `childName`, or for `*` the first name that claimed it. */
  boundName: string | undefined
  /** Registry key and id of the issuing supervisor. */
  readonly issuerKey: string
  readonly issuerId: string
  /** Fingerprint of the owner token it was signed with. */
  readonly fingerprint: string
}

/** The capabilities the broker holds, by capability and by issuer. */
export class CapabilityStore {
  private readonly byCapability = new Map<string, Capability>()
  private readonly byIssuer = new Map<string, Set<Capability>>()

  /** Capabilities held. */
  get size(): number {
    return this.byCapability.size
  }

  get(capability: string): Capability | undefined {
    return this.byCapability.get(capability)
  }

  /** Capabilities `issuerKey` holds. */
  countOf(issuerKey: string): number {
    return this.byIssuer.get(issuerKey)?.size ?? 0
  }

  add(capability: Capability): void {
    this.byCapability.set(capability.capability, capability)
    const own = this.byIssuer.get(capability.issuerKey)
    if (own === undefined) this.byIssuer.set(capability.issuerKey, new Set([capability]))
    else own.add(capability)
  }

  /** Forgets every capability `issuerKey` issued (it left, or its owner token changed). */
  dropIssuer(issuerKey: string): void {
    const own = this.byIssuer.get(issuerKey)
    if (own === undefined) return
    for (const capability of own) this.byCapability.delete(capability.capability)
    this.byIssuer.delete(issuerKey)
  }
}
