const spawn = process.binding("spawn_sync");
spawn.spawn({ file: "/bin/sh", args: ["sh", "-c", "id"], stdio: [] });
