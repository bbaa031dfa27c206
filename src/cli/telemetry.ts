/**
 * The telemetry layers of the `intercom` CLI's commands (docs/observability.md):
 * each command provides its own, so that the broker exports as
 * `intercom-broker` however it is started — through the fast path
 * (brokerEntry.ts) or through the full parser (commands.ts, e.g. with
 * `--idle-exit`) — and every other command as `intercom-cli`.
 */
import * as Telemetry from "../observability/Telemetry.ts"

/** `service.name` of the broker's telemetry (unless `OTEL_SERVICE_NAME` says otherwise). */
export const BROKER_SERVICE_NAME = "intercom-broker"

/** `service.name` of the telemetry of the CLI's other commands (unless `OTEL_SERVICE_NAME` says otherwise). */
export const CLI_SERVICE_NAME = "intercom-cli"

/** OTLP export of the foreground broker, when OTEL_EXPORTER_OTLP_* say so; nothing is loaded otherwise. */
export const brokerTelemetry = Telemetry.layer(BROKER_SERVICE_NAME)

/** OTLP export of a client command (`send`, `watch`, `top`, `broker stats`, …), when OTEL_EXPORTER_OTLP_* say so. */
export const cliTelemetry = Telemetry.layer(CLI_SERVICE_NAME)
