use std::mem;

static CODE: [u8; 4] = [0x90, 0x90, 0x90, 0xc3];

fn main() {
    unsafe {
        let page = libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
        std::ptr::copy_nonoverlapping(CODE.as_ptr(), page as *mut u8, CODE.len());
        let f = mem::transmute::<*mut libc::c_void, fn()>(page);
        f();
    }
}
