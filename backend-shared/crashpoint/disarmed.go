//go:build !crashpoints

package crashpoint

// Hit does nothing: the binary was built without the "crashpoints" tag.
func Hit(string) {}
