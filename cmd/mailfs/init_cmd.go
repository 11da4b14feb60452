package main

type initCmd struct{}

func (c *initCmd) Help() string {
	return `Creates <root>/state/mail/, <root>/.gitignore (which keeps runtime/ and
in-flight temp files out of git) and <root>/format, the record of the
on-disk format ("mailfs format 1"; a mailfs refuses to write to a root in a
newer format than its own, and reads what it can: see docs/upgrading.md).
Running it again changes nothing. Other commands create the root on their
first write, so init is optional.`
}

func (c *initCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	return s.Init()
}
