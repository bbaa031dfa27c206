/**
 * `effect-intercom/pi`: the pi extension. Its default export is the extension
 * factory pi loads (package.json's `pi.extensions` names this module's
 * compiled file); docs/pi.md describes installing and using it.
 *
 * @since 0.1.0
 */
export { default } from "./extension.ts"
export { INBOUND_EVENT } from "./host.ts"
export { MESSAGE_TYPE, RECEIVED_ENTRY, SENT_ENTRY } from "./entries.ts"
export { COMMAND_NAME, LOADER_NAME, TOOL_NAME } from "./names.ts"
export {
  AUTHORIZE_CHILD_EVENT,
  type AuthorizeChildRequest,
  type AuthorizeChildResult,
  readAuthorizeChildRequest,
  requestChildAuthorization
} from "./authorize.ts"
