/**
 * Reading TEXT that holds NUL characters back from `node:sqlite`.
 *
 * The broker's keys join a scope and an id with a NUL (`Registry.sessionKey`),
 * and the store keeps them as TEXT: in the replay blocks, the mail's record
 * keys, the ask edges' keys and the owed notices' senders. Free text may hold
 * NULs too: a question's message and answer, an undelivered payload and its
 * failure, a result's title and names (QuestionStore, UndeliveredStore,
 * ResultSql select every TEXT column they read back this way; JSON columns
 * need not, as JSON writes a NUL as `\u0000`). SQLite stores every
 * byte, and Node 24's `node:sqlite` reads them all back; Node 22's (still
 * supported, `engines`) cuts a TEXT value at its first NUL when it reads it,
 * so a database it wrote could not be loaded again. Such a column is read as
 * `hex(column)` and turned back into its text here: hex digits hold no NUL on
 * any Node. The mail store's load pays the decoding once, at the broker's
 * start; the other stores pay it per row they read, which is small next to
 * the statement.
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

/**
 * The SQL that selects the TEXT column `column` as hex under its own name,
 * keeping NULL as NULL (SQLite's `hex(NULL)` is `''`, which would read back
 * as an empty string). Decode it with {@link textOfHexOrNull}.
 *
 * @example
 * ```ts
 * // SELECT ${hexColumn("answer")} FROM questions
 * hexColumn("answer") // "CASE WHEN answer IS NULL THEN NULL ELSE hex(answer) END AS answer"
 * ```
 *
 * @category encoding
 * @since 0.1.0
 */
export const hexColumn = (column: string): string =>
  `CASE WHEN ${column} IS NULL THEN NULL ELSE hex(${column}) END AS ${column}`

/**
 * {@link textOfHex} of a column selected with {@link hexColumn}: NULL stays
 * `null`; any other value (a non-string is kept as it is, for the row's own
 * checks to refuse).
 *
 * @category decoding
 * @since 0.1.0
 */
export const textOfHexOrNull = (hex: unknown): unknown => typeof hex === "string" ? textOfHex(hex) : hex

/**
 * A row whose `columns` were selected with {@link hexColumn}, with those
 * columns turned back into their text; the other columns as they are.
 *
 * @category decoding
 * @since 0.1.0
 */
export const decodeHexColumns = (
  row: Readonly<Record<string, unknown>>,
  columns: ReadonlyArray<string>
): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...row }
  for (const column of columns) out[column] = textOfHexOrNull(row[column])
  return out
}
