package protocol

// BadNameByte returns the index of the first byte of name that RocketMQ
// does not allow in a topic or group name, or -1 when every byte is one
// of [%|a-zA-Z0-9_-]. It does not check emptiness or length.
func BadNameByte(name string) int {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '%' || c == '|' || c == '_' || c == '-') {
			return i
		}
	}
	return -1
}
