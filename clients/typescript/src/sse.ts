// Server-sent events from a fetch response's body: the service's streamed runs
// (docs/api.md, "Streaming"). Each event is its name and its JSON data; comments (": still
// running") and other fields are skipped.

export interface ServerEvent {
  event: string;
  data: unknown;
}

export async function* events(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let name = 'message';
  let data: string[] = [];
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, end).replace(/\r$/, '');
        buffer = buffer.slice(end + 1);
        if (line === '') {
          if (data.length > 0) yield { event: name, data: JSON.parse(data.join('\n')) };
          name = 'message';
          data = [];
        } else if (line.startsWith('event:')) {
          name = line.slice(6).trim();
        } else if (line.startsWith('data:')) {
          data.push(line.slice(5).replace(/^ /, ''));
        }
      }
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}
