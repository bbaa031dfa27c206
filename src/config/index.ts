/**
 * Intercom configuration: the agent dir and its runtime paths (the broker
 * socket's short fallback included), `config.json`, environment overrides,
 * defaults. See docs/configuration.md.
 */
export {
  AGENT_DIR_ENV_VARS,
  type AgentDirEnvVar,
  type AgentDirInput,
  type AgentDirResolution,
  type AgentDirSource,
  atomicAgentDir,
  configFileCandidates,
  defaultAgentDir,
  type Environment,
  type IntercomPaths,
  intercomPaths,
  resolveAgentDir,
  resolveIntercomPaths
} from "./agentDir.ts"
export {
  type ConfigFileProblem,
  type IntercomConfigError,
  IntercomConfigFileError,
  IntercomEnvError,
  type InvalidField
} from "./errors.ts"
export { chooseRuntimeDir, currentUid, prepareFallbackDir, processSocketPlacement } from "./runtimeDir.ts"
export {
  agentDirHash,
  fallbackDirOf,
  type SocketLocation,
  socketLocation,
  SocketPathError,
  socketPathLimit,
  type SocketPlacement
} from "./socketPath.ts"
export {
  type LoadIntercomSettingsOptions,
  loadIntercomSettings,
  logIntercomSettingsProblems,
  readConfigFile,
  readConfigFileSync,
  readIntercomSettings
} from "./load.ts"
export {
  CONFIG_KEY_EXPECTATIONS,
  CONFIG_KEYS,
  type ConfigKey,
  InboundTrigger,
  IntercomConfigFile,
  ToolVisibility
} from "./schema.ts"
export { ConfigFileRead, parseConfigFile, type ParsedConfigFile } from "./configFile.ts"
export { DEFAULT_GROUP, homeGroup, normalizeGroup } from "./group.ts"
export {
  type BrokerLaunch,
  brokerLaunch,
  DEFAULT_BROKER_ARGS,
  DEFAULT_BROKER_COMMAND,
  INTERCOM_DEFAULTS,
  INTERCOM_ENV,
  type IntercomSettings,
  type IntercomSettingsResolution,
  type LivenessSettings,
  parsePositiveInt,
  resolveIntercomSettings,
  type ResolveIntercomSettingsInput
} from "./settings.ts"
