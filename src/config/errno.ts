/**
 * The errno code of a Node system error (`EEXIST`, `EADDRINUSE`, `EPERM`, …):
 * the one way this package asks why a file, socket or signal call failed.
 */

/**
 * `cause.code` when `cause` is an object whose `code` is a string (every Node
 * system error), else `undefined`.
 *
 * @example
 * try {
 *   fs.mkdirSync(dir)
 * } catch (error) {
 *   if (errorCode(error) !== "EEXIST") throw error
 * }
 */
export const errorCode = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined

/** An error's message, or the thrown value as text when it is not an `Error`. */
export const errorMessage = (error: unknown): string => error instanceof Error ? error.message : String(error)

/**
 * A short text for why a file call failed: its errno code when it has one
 * (`EACCES`), else the error's message.
 */
export const errorText = (error: unknown): string => errorCode(error) ?? errorMessage(error)
