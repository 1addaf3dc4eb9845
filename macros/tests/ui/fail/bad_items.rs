struct Opt;

impl Opt {
    fn step(&mut self) {}
}

#[memlint::mem_guard]
const fn constant() -> u32 {
    1
}

#[memlint::mem_guard]
struct NotAFunction;

#[memlint::mem_guard(loop = "train")]
fn missing_label(opt: &mut Opt) {
    'epochs: for _ in 0..3 {
        opt.step();
    }
}

#[memlint::mem_guard]
fn two_training_loops(opt: &mut Opt) {
    for _ in 0..3 {
        opt.step();
    }
    for _ in 0..3 {
        opt.step();
    }
}

#[memlint::mem_guard(loop = "inner")]
fn label_in_closure(opt: &mut Opt) {
    let mut run = || {
        'inner: for _ in 0..3 {
            opt.step();
        }
    };
    run();
}

fn main() {}
