// A file that does not parse is reported, not fatal.
fn train( { //~ parse_error
