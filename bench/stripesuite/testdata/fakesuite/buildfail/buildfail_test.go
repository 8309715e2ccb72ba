package buildfail

import "testing"

var wrong int = "not an int"

func TestNeverBuilt(t *testing.T) {}
