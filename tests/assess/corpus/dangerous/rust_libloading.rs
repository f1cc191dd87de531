use libloading::{Library, Symbol};

fn main() {
    unsafe {
        let lib = Library::new("/tmp/libpayload.so").unwrap();
        let run: Symbol<unsafe extern "C" fn()> = lib.get(b"run").unwrap();
        run();
    }
}
