// A client for hazmat's HTTP API (docs/api.md): runs, streamed runs, assessment and sessions.
// The request and result types are generated from docs/openapi.json (src/schema.ts, by
// openapi-typescript: `npm run generate`); this file is the thin layer over them: the key,
// errors as exceptions, server-sent events and a session's calls.

import type { components } from './schema.js';
import { events } from './sse.js';

type Schemas = components['schemas'];
export type RunRequest = Schemas['RunRequest'];
export type RunResult = Schemas['RunResult'];
export type AssessRequest = Schemas['AssessRequest'];
export type SessionRequest = Schemas['SessionRequest'];
export type SessionInfo = Schemas['Session'];
export type SessionRun = Schemas['SessionRun'];
export type PausedSession = Schemas['PausedSession'];
export type ForkRequest = Schemas['ForkRequest'];
export type ForkedSessions = Schemas['ForkedSessions'];
export type Installed = Schemas['Installed'];
export type ErrorBody = Schemas['Error'];
export type { components, paths } from './schema.js';
export { events, type ServerEvent } from './sse.js';

/** A request the service refused or could not carry out: its HTTP status, the error's type
 * (`InputError`, `QuotaExceeded`, `SessionClosed`, ...) and message. */
export class HazmatError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'HazmatError';
  }
}

export interface ClientOptions {
  /** The service's address, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** The tenant's key (`hzm_...`), sent as `Authorization: Bearer`. */
  apiKey: string;
  /** A `fetch` of your own (default: the global one). */
  fetch?: typeof fetch;
}

/** What a streamed run hands over while it runs; the result comes at the end. */
export interface StreamHandlers {
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
  onDisplay?: (index: number, data: Record<string, string>) => void;
  /** Through a cluster with retries: the worker died and the run starts again elsewhere. */
  onRetry?: (attempt: number, reason: string) => void;
  /** Aborting it cancels the run (a session call is interrupted; the session stays). */
  signal?: AbortSignal;
}

export class Hazmat {
  private readonly base: string;
  private readonly key: string;
  private readonly fetcher: typeof fetch;

  constructor(options: ClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.key = options.apiKey;
    this.fetcher = options.fetch ?? fetch;
  }

  /** Run a program once, in a fresh sandbox; a program that fails is still a result. */
  run(request: RunRequest): Promise<RunResult> {
    return this.call('POST', '/v1/runs', request);
  }

  /** The same run, its output handed over while it runs. */
  stream(request: RunRequest, handlers: StreamHandlers = {}): Promise<RunResult> {
    return this.streamAt('/v1/runs', request, handlers);
  }

  /** Assess code without running it: its risk level, findings and the decision. */
  assess(request: AssessRequest): Promise<Record<string, unknown>> {
    return this.call('POST', '/v1/assess', request);
  }

  /** Open a session: a sandbox kept between calls (files, and Python's variables). */
  async openSession(request: SessionRequest = {}): Promise<Session> {
    const info = await this.call<SessionInfo>('POST', '/v1/sessions', request);
    return new Session(this, info);
  }

  /** The service's health (no key needed). */
  health(): Promise<Record<string, unknown>> {
    return this.call('GET', '/v1/health');
  }

  /** @internal One request and its JSON answer; an error answer raises `HazmatError`. */
  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const answer = await this.send(method, path, body, 'application/json');
    return (await answer.json()) as T;
  }

  /** @internal A streamed run's events, handed over, until its result. */
  async streamAt(path: string, body: unknown, handlers: StreamHandlers): Promise<RunResult> {
    const answer = await this.send('POST', path, body, 'text/event-stream', handlers.signal);
    if (answer.body === null) throw new HazmatError(answer.status, 'InfraError', 'no stream');
    for await (const { event, data } of events(answer.body)) {
      const given = data as Record<string, unknown>;
      if (event === 'stdout') handlers.onStdout?.(String(given.text ?? ''));
      else if (event === 'stderr') handlers.onStderr?.(String(given.text ?? ''));
      else if (event === 'display') {
        handlers.onDisplay?.(Number(given.index), given.data as Record<string, string>);
      } else if (event === 'retry') handlers.onRetry?.(Number(given.attempt), String(given.reason));
      else if (event === 'result') return data as RunResult;
      else if (event === 'error') throw errorFrom(Number(given.status ?? 500), given);
    }
    throw new HazmatError(answer.status, 'InfraError', 'the stream ended without a result');
  }

  private async send(
    method: string,
    path: string,
    body: unknown,
    accept: string,
    signal?: AbortSignal,
  ): Promise<Response> {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.key}`,
      Accept: accept,
    };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const answer = await this.fetcher(this.base + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
    if (!answer.ok) {
      const text = await answer.text();
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = { error: { type: 'HTTPError', message: text || answer.statusText } };
      }
      const retry = answer.headers.get('Retry-After');
      throw errorFrom(answer.status, parsed, retry === null ? undefined : Number(retry));
    }
    return answer;
  }
}

/** A session of the service: each call runs in the same sandbox. */
export class Session {
  readonly id: string;

  constructor(
    private readonly client: Hazmat,
    readonly info: SessionInfo,
  ) {
    this.id = String((info as { id: string }).id);
  }

  private get at(): string {
    return `/v1/sessions/${encodeURIComponent(this.id)}`;
  }

  /** Run code in the session; past its time the call is interrupted and the session stays. */
  run(request: SessionRun): Promise<RunResult> {
    return this.client.call('POST', `${this.at}/runs`, request);
  }

  /** The same call, its output handed over while it runs. */
  stream(request: SessionRun, handlers: StreamHandlers = {}): Promise<RunResult> {
    return this.client.streamAt(`${this.at}/runs`, request, handlers);
  }

  /** Put files into the session's working directory: text, or bytes. */
  async upload(files: Record<string, string | Uint8Array>): Promise<string[]> {
    const text: Record<string, string> = {};
    const bytes: Record<string, string> = {};
    for (const [name, data] of Object.entries(files)) {
      if (typeof data === 'string') text[name] = data;
      else bytes[name] = Buffer.from(data).toString('base64');
    }
    const body = { files: text, files_base64: bytes };
    const answer = await this.client.call<{ uploaded: string[] }>('PUT', `${this.at}/files`, body);
    return answer.uploaded;
  }

  /** Fetch files from the session's working directory, as bytes. */
  async download(names: string[]): Promise<Record<string, Uint8Array>> {
    const query = names.map((name) => `name=${encodeURIComponent(name)}`).join('&');
    const answer = await this.client.call<{ files_base64: Record<string, string> }>(
      'GET',
      `${this.at}/files?${query}`,
    );
    const files: Record<string, Uint8Array> = {};
    for (const [name, data] of Object.entries(answer.files_base64)) {
      files[name] = new Uint8Array(Buffer.from(data, 'base64'));
    }
    return files;
  }

  /** Install Python packages (`['seaborn==0.13.2']`) from the service's package index, for
   * later calls to import; a 403 `InstallRefused` says what to use instead. */
  install(packages: string[]): Promise<Installed> {
    return this.client.call('POST', `${this.at}/packages`, { packages });
  }

  /** Pause it: its files (and Python's variables) are kept, its sandbox removed. */
  pause(): Promise<PausedSession> {
    return this.client.call('POST', `${this.at}/pause`);
  }

  /** `n` new sessions, each a new sandbox with this one's files and (Python) variables as
   * they are now (each one's `info.forked` says which came back); this one goes on. */
  async fork(n = 1): Promise<Session[]> {
    const answer = await this.client.call<ForkedSessions>('POST', `${this.at}/fork`, { n });
    return answer.sessions.map((info) => new Session(this.client, info));
  }

  /** Close it and remove its sandbox. */
  async close(): Promise<void> {
    await this.client.call('DELETE', this.at);
  }
}

function errorFrom(status: number, body: unknown, retryAfter?: number): HazmatError {
  const error = (body as { error?: { type?: string; message?: string } } | null)?.error ?? {};
  return new HazmatError(
    status,
    error.type ?? 'HTTPError',
    error.message ?? `HTTP ${status}`,
    retryAfter,
  );
}
