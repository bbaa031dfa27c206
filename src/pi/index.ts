/**
 * `effect-intercom/pi`: the pi extension. Its default export is the extension
 * factory pi loads (package.json's `pi.extensions` names this module's
 * compiled file); docs/pi.md describes installing and using it. A launcher
 * extension gets a delegated child's environment from it over `pi.events`
 * (`requestChildAuthorization`, `AUTHORIZE_CHILD_EVENT`).
 *
 * @since 0.1.0
 */
export { default } from "./extension.ts"
export { INBOUND_EVENT } from "./host.ts"
export { MESSAGE_TYPE, RECEIVED_ENTRY, SENT_ENTRY } from "./entries.ts"
export { COMMAND_NAME, LOADER_NAME, TOOL_NAME } from "./names.ts"
/** The provider for launcher extensions (C-SUP-7): authorizing a delegated child over `pi.events`. */
export {
  AUTHORIZE_CHILD_EVENT,
  type AuthorizeChildRequest,
  type AuthorizeChildResult,
  readAuthorizeChildRequest,
  requestChildAuthorization
} from "./authorize.ts"
/** What a launcher says about the child it is about to start (`AuthorizeChildRequest.launch`). */
export type { ChildLaunchRequest } from "../session/SupervisorLaunch.ts"
