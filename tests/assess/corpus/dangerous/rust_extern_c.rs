use std::ffi::CString;

extern "C" {
    fn system(cmd: *const std::os::raw::c_char) -> i32;
}

fn main() {
    let cmd = CString::new("id").unwrap();
    unsafe {
        system(cmd.as_ptr());
    }
}
