"""End-to-end tests: real git repositories, real pytest runs, the installed CLI."""
