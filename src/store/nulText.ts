/**
 * Reading TEXT that holds NUL characters back from `node:sqlite`.
 *
 * The broker's keys join a scope and an id with a NUL (`Registry.sessionKey`),
 * and the store keeps them as TEXT: in the replay blocks, the mail's record
 * keys, the ask edges' keys and the owed notices' senders. SQLite stores every
 * byte, and Node 24's `node:sqlite` reads them all back; Node 22's (still
 * supported, `engines`) cuts a TEXT value at its first NUL when it reads it,
 * so a database it wrote could not be loaded again. Such a column is read as
 * `hex(column)` and turned back into its text here: hex digits hold no NUL on
 * any Node, and the load pays the decoding once, at the broker's start.
 *
 * @since 0.1.0
 */

/**
 * The text whose UTF-8 bytes SQLite's `hex()` spelled.
 *
 * @example
 * ```ts
 * // SELECT hex(record_key) AS record_key FROM mail
 * textOfHex("610062") // "a\u0000b"
 * ```
 *
 * @category decoding
 * @since 0.1.0
 */
export const textOfHex = (hex: string): string => Buffer.from(hex, "hex").toString("utf8")
