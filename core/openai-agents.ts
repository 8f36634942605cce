/**
 * context-host/openai-agents: the context engine in an OpenAI Agents SDK run. Pass
 * `contextInputFilter(engine)` as `RunConfig.callModelInputFilter` and name the session in
 * the run's context (`context: { "context-host": { sessionId, location } }`): each model
 * call then gets the Baseline after the agent's instructions and the admitted
 * Mid-Conversation System Messages in its input. `@openai/agents` is an optional peer
 * dependency: this entry does not import it.
 *
 * @module
 */

export {
  type AgentSession,
  type ContextInputFilterOptions,
  contextInputFilter,
  type InputFilterArgsLike,
  type ModelInputLike,
} from "./host/openai-agents.ts";
