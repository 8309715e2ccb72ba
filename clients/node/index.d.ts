export const SESSION_HEADER: string;

export interface StartOptions {
  scenarios?: string[];
  binary?: string;
  args?: string[];
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

export interface Filter {
  route?: string;
  session?: string;
  method?: string;
  path?: string;
  status?: string | number;
  idempotency?: string;
  matched?: boolean | string;
  /** An RFC 3339 time, an entry id, or a Date (sent as its ISO string). */
  since?: string | number | Date;
  header?: Record<string, string>;
  query?: Record<string, string>;
  form?: Record<string, string>;
  body?: Record<string, string | number | boolean>;
}

export interface Expectation extends Filter {
  count?: number;
  atLeast?: number;
  atMost?: number;
  none?: boolean;
}

export interface Added {
  id: string;
  added: string;
  session?: string;
  routes: string[];
  bytes: number;
}

export class VerifyError extends Error {
  found: number;
}

export class Mock {
  readonly url: string;
  add(doc: string | object, opts?: { session?: string }): Promise<Added>;
  remove(id: string): Promise<void>;
  count(filter?: Filter): Promise<number>;
  requests(filter?: Filter): Promise<object[]>;
  verify(expect?: Expectation): Promise<number>;
  reset(): Promise<void>;
  stop(): Promise<void>;
}

export function start(opts?: StartOptions): Promise<Mock>;
export function connect(url: string, opts?: { token?: string }): Mock;
