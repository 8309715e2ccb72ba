package adminclient

// SetPageSize makes Routes read pages of n routes.
func SetPageSize(c *Client, n int) { c.pageSize = n }
