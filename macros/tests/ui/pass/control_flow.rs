// The expansion must not change behaviour: break/continue/labels/return/?/loop values.

struct Opt {
    steps: u32,
}

impl Opt {
    fn backward_step(&mut self, _loss: &f32) -> Result<(), String> {
        self.steps += 1;
        if self.steps > 1000 { Err("too many steps".to_owned()) } else { Ok(()) }
    }
}

#[memlint::mem_guard(warmup = 0, window = 3, report = "target/memlint/ui-control-flow.json")]
fn train(data: &[f32], opt: &mut Opt) -> Result<f32, String> {
    let mut sum = 0.0;
    'outer: for x in data {
        if *x < 0.0 {
            continue;
        }
        for _ in 0..2 {
            if *x == 7.0 {
                continue 'outer;
            }
        }
        if *x > 100.0 {
            break 'outer;
        }
        if x.is_nan() {
            return Err("nan".to_owned());
        }
        opt.backward_step(x)?;
        sum += x;
    }
    Ok(sum)
}

#[memlint::mem_guard]
fn loop_value(opt: &mut Opt) -> u32 {
    let mut i = 0;
    let found = loop {
        i += 1;
        opt.backward_step(&1.0).unwrap();
        if i == 5 {
            break i * 10;
        }
    };
    found + 1
}

#[memlint::mem_guard]
fn never_breaks(opt: &mut Opt) -> Result<u32, String> {
    let mut i = 0;
    loop {
        i += 1;
        opt.backward_step(&1.0)?;
        if i == 3 {
            return Ok(i);
        }
    }
}

#[memlint::mem_guard]
fn while_let(opt: &mut Opt, mut queue: Vec<f32>) -> usize {
    let mut n = 0;
    while let Some(x) = queue.pop() {
        opt.backward_step(&x).unwrap();
        n += 1;
    }
    n
}

#[memlint::mem_guard]
fn question_mark(opt: &mut Opt) -> Result<(), String> {
    for _ in 0..2000 {
        opt.backward_step(&0.5)?;
    }
    Ok(())
}

fn main() {
    // A report left by an earlier run must not pass for this run's.
    let _ = std::fs::remove_file("target/memlint/ui-control-flow.json");
    let mut opt = Opt { steps: 0 };
    assert_eq!(train(&[1.0, -1.0, 7.0, 2.0, 500.0, 3.0], &mut opt), Ok(3.0));
    assert_eq!(opt.steps, 2);
    assert_eq!(train(&[1.0, f32::NAN, 2.0], &mut opt), Err("nan".to_owned()));
    assert_eq!(loop_value(&mut opt), 51);
    assert_eq!(never_breaks(&mut opt), Ok(3));
    assert_eq!(while_let(&mut opt, vec![1.0, 2.0, 3.0]), 3);
    let before = opt.steps;
    assert_eq!(question_mark(&mut opt), Err("too many steps".to_owned()));
    assert_eq!(opt.steps, 1001);
    assert!(before < 1001);
    // The first run of `train` sampled its loop: 4 iterations entered the body's tick. Reports
    // are written by a background thread: wait for them before reading one.
    memlint::wait_for_reports();
    let report = std::fs::read_to_string("target/memlint/ui-control-flow.json").expect("report written");
    assert!(report.contains("\"function\": \"train\""), "{report}");
    assert!(report.contains("\"mode\": \"loop\""), "{report}");
    assert!(report.contains("\"outcome\": \"returned\""), "{report}");
}
