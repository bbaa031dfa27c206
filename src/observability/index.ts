/**
 * Observability: OTLP export of traces and metrics (`Telemetry`), switched on
 * by the standard OpenTelemetry environment variables (docs/observability.md).
 */
export * as Telemetry from "./Telemetry.ts"
