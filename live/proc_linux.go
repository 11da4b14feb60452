package live

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// statFields returns the fields of /proc/<pid>/stat after the command
// name (which may hold spaces and parentheses): field 3 is at index 0.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoProcess
	}
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, errors.New("live: unreadable /proc/" + strconv.Itoa(pid) + "/stat")
	}
	return strings.Fields(s[i+1:]), nil
}

// procStart is field 22 of /proc/<pid>/stat: the start time in clock
// ticks since boot, as Claude Code's and Qwen Code's registries write it.
func procStart(pid int) (string, error) {
	f, err := statFields(pid)
	if err != nil {
		return "", err
	}
	if len(f) < 20 {
		return "", errors.New("live: short /proc/" + strconv.Itoa(pid) + "/stat")
	}
	return f[19], nil
}

// parentOf is field 4 of /proc/<pid>/stat.
func parentOf(pid int) (int, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(f[1])
}

// bootID is the kernel's id of this boot, which Qwen Code puts before the
// start ticks in its procStart.
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}
