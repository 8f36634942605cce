// Owns the error conventions (decision 011): a class per condition a user can meet,
// named `<Thing><Condition>` (`SessionNotFound`, `SettingInvalid`), built from one
// options object, with a message that names the thing and the place.

/** The base of every named context-host error. */
export class ContextHostError extends Error {
  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
  }
  override get name(): string {
    return this.constructor.name;
  }
}

/** A setting has a value the host cannot use; names the setting and the value. */
export class SettingInvalid extends ContextHostError {
  readonly setting: string;
  constructor(options: { readonly setting: string; readonly reason: string }) {
    super(`setting ${options.setting}: ${options.reason}`);
    this.setting = options.setting;
  }
}

/**
 * Disposers of a scope (a host, a plugin generation, a watcher) threw while it closed; every
 * other disposer still ran. `errors` holds what each threw, newest disposer first, like an
 * `AggregateError`'s.
 */
export class DisposersFailed extends ContextHostError {
  /** The scope's name: `host`, `plugin weather generation 3`. */
  readonly scope: string;
  readonly errors: readonly unknown[];
  constructor(options: { readonly scope: string; readonly errors: readonly unknown[] }) {
    const count = options.errors.length;
    super(`${options.scope}: ${count} disposer${count === 1 ? "" : "s"} failed`);
    this.scope = options.scope;
    this.errors = options.errors;
  }
}

/** The message of any thrown value, whatever was thrown (an `AggregateError` or `DisposersFailed` lists its parts). */
export function messageOf(error: unknown): string {
  if (error instanceof AggregateError || error instanceof DisposersFailed)
    return [error.message, ...error.errors.map(messageOf)].join("; ");
  if (error instanceof Error) return error.message;
  try {
    return String(error);
  } catch {
    // A prototype-less object or one whose toString throws.
    return Object.prototype.toString.call(error);
  }
}
