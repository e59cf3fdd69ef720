/* test-data-dir.c — the default data directory (mcl_data_dir_default, dataset.h):
 * $METACL_DATA; else ./data/cache when that directory exists; else $XDG_DATA_HOME/metacl
 * (only an absolute $XDG_DATA_HOME counts); else $HOME/.local/share/metacl; else none (NULL).
 * Runs in a fresh temporary directory and sets the environment itself. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "testutil.h"

#define SEED 0

static int is(const char *want)
{
    const char *got = mcl_data_dir_default();
    if (!got || strcmp(got, want) != 0) {
        if (!got) got = "(none)";
        printf("  got '%s', want '%s'\n", got, want);
        return 0;
    }
    return 1;
}

int main(void)
{
    tu_begin("test-data-dir", SEED);
    char tmpl[] = "/tmp/metacl-data-dir-XXXXXX", old[4096];
    if (!getcwd(old, sizeof old) || !mkdtemp(tmpl) || chdir(tmpl) != 0) {
        printf("cannot make a temporary directory\n");
        return 1;
    }
    unsetenv("METACL_DATA");
    setenv("HOME", "/home/someone", 1);
    unsetenv("XDG_DATA_HOME");
    CHECK(is("/home/someone/.local/share/metacl"), "no data/cache, no XDG_DATA_HOME: ~/.local/share/metacl");
    setenv("XDG_DATA_HOME", "/srv/xdg", 1);
    CHECK(is("/srv/xdg/metacl"), "XDG_DATA_HOME/metacl");
    setenv("XDG_DATA_HOME", "", 1);
    CHECK(is("/home/someone/.local/share/metacl"), "an empty XDG_DATA_HOME is ignored");
    setenv("XDG_DATA_HOME", "rel/xdg", 1);
    CHECK(is("/home/someone/.local/share/metacl"), "a relative XDG_DATA_HOME is ignored");
    /* the check must catch a wrong answer */
    CHECK(!is("/srv/xdg/metacl"), "a wrong directory is detected");
    setenv("XDG_DATA_HOME", "/srv/xdg", 1);
    /* a plain file named data/cache is not a data directory */
    CHECK(mkdir("data", 0700) == 0, "mkdir data");
    FILE *f = fopen("data/cache", "w");
    CHECK(f != NULL, "create the file data/cache");
    if (f) fclose(f);
    CHECK(is("/srv/xdg/metacl"), "a file data/cache does not count");
    CHECK(unlink("data/cache") == 0 && mkdir("data/cache", 0700) == 0, "mkdir data/cache");
    CHECK(is("data/cache"), "./data/cache wins over XDG when it exists");
    setenv("METACL_DATA", "/elsewhere/cache", 1);
    CHECK(is("/elsewhere/cache"), "METACL_DATA wins over ./data/cache");
    setenv("METACL_DATA", "", 1);
    CHECK(is("data/cache"), "an empty METACL_DATA is ignored");
    unsetenv("METACL_DATA");
    rmdir("data/cache");
    rmdir("data");
    unsetenv("XDG_DATA_HOME");
    unsetenv("HOME");
    CHECK(mcl_data_dir_default() == NULL, "no HOME at all: none (not a data/cache made in the working directory)");
    setenv("HOME", "", 1);
    setenv("XDG_DATA_HOME", "rel/xdg", 1);
    CHECK(mcl_data_dir_default() == NULL, "an empty HOME and a relative XDG_DATA_HOME: none");
    CHECK(mkdir("data", 0700) == 0 && mkdir("data/cache", 0700) == 0, "mkdir data/cache");
    CHECK(is("data/cache"), "no HOME but an existing ./data/cache: that one");
    rmdir("data/cache");
    rmdir("data");
    unsetenv("XDG_DATA_HOME");
    if (chdir(old) != 0) printf("cannot go back to %s\n", old);
    rmdir(tmpl);
    return tu_summary();
}
