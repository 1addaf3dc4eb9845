// `lines` marks every statement of the sampled loop's body: the body must keep its type and
// behaviour, and no mark may be unreachable (warnings are errors here).
#![deny(warnings)]

struct Opt {
    steps: u32,
}

impl Opt {
    fn backward_step(&mut self, _loss: &f32) -> Result<(), String> {
        self.steps += 1;
        Ok(())
    }
}

#[memlint::mem_guard(lines, warmup = 0, window = 3, report = "target/memlint/ui-lines.json")]
fn train(data: &[f32], opt: &mut Opt) -> Result<f32, String> {
    let mut sum = 0.0;
    for x in data {
        fn double(v: f32) -> f32 {
            v * 2.0
        }
        let Some(y) = Some(double(*x)) else { continue };
        println!("{y}");
        opt.backward_step(&y)?;
        if y > 10.0 { sum += 1.0 } else { sum += y }
    }
    Ok(sum)
}

#[memlint::mem_guard(lines)]
fn loop_value(opt: &mut Opt) -> u32 {
    let mut i = 0;
    loop {
        i += 1;
        opt.backward_step(&1.0).unwrap();
        if i == 5 {
            break i * 10;
        }
        continue;
    }
}

fn main() {
    let mut opt = Opt { steps: 0 };
    assert_eq!(train(&[1.0, 2.0, 8.0], &mut opt), Ok(7.0));
    assert_eq!(opt.steps, 3);
    assert_eq!(loop_value(&mut opt), 50);
    assert_eq!(opt.steps, 8);
}
