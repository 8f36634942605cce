// Owns the inspector's surface for the `dev` command: the server, the read interface it
// shows, and the adapter that reads a real host.

export {
  type HostInspectorSource,
  type HostInspectorSourceOptions,
  hostInspectorSource,
  type RecordedRequest,
  type RequestRecorder,
  requestRecorder,
} from "./host-source.ts";
export { type Inspector, type InspectorOptions, InspectorPortUnavailable, startInspector } from "./server.ts";
export type {
  EpochView,
  InspectorEvent,
  InspectorSource,
  MessageView,
  PluginView,
  ProblemView,
  Readable,
  ReloadView,
  RequestView,
  SessionSummary,
  SessionView,
  SnapshotRow,
} from "./source.ts";
