/* governor_opts.h — the governor's command-line options, shared by the commands that
 * generate (run, chat, soak, serve): the policy from flags, an optional simulated device,
 * and the governor's log on stderr; and the size parser of --mem-budget (run, bench). */
#ifndef EDGELLM_CLI_GOVERNOR_OPTS_H
#define EDGELLM_CLI_GOVERNOR_OPTS_H
#include "args.h"
#include "edgellm_tools.h"

typedef struct {
    int enabled;               /* --governor, or any other governor option           */
    int n_given;               /* governor options given (they imply --governor)      */
    double temps[3];           /* --gov-temps WARM,HOT,CRIT                           */
    double tok_s[3];           /* --gov-tok-s WARM,HOT,CRIT (0: no cap)               */
    double hysteresis_c;       /* --gov-hysteresis                                    */
    double battery_pct;        /* --gov-battery                                       */
    int unknown_level;         /* --gov-unknown                                       */
    const char *light_model;   /* --light-model                                       */
    const char *policy_file;   /* --gov-policy FILE.json                              */
    const char *sysfs_root;    /* --sysfs-root                                        */
    const char *sim_dir;       /* --sim-device DIR                                    */
    double sim_tau_s, sim_k;   /* --sim-tau, --sim-k                                  */
    int sim_load;              /* --sim-load: 0 cpu, 1 declared                       */
} cli_gov_opts;

/* Defaults (the library's policy for n_threads, no simulated device). */
void cli_gov_opts_init(cli_gov_opts *o);
extern const cli_choice cli_gov_levels[];
extern const cli_choice cli_sim_loads[];
int cli_parse_three(const char *opt, const char *value, void *dst, char *msg, size_t msg_size);
/* A size ("300M", "1.5G", "512MiB", "4096K", bytes; K/M/G/T powers of 1024) into a uint64_t
 * (--mem-budget of run and bench). */
int cli_parse_size(const char *opt, const char *value, void *dst, char *msg, size_t msg_size);

#define CLI_GOV_OPTS(O)                                                                                              \
    {CLI_GROUP("thermal and battery governor (docs/governor.md)")},                                                 \
    {CLI_FLAG(NULL, "--governor", &(O)->enabled, 1),                                                                 \
     .help = "lower threads, cap tok/s, switch to --light-model or pause as the device heats (levels warm / hot / "  \
             "critical) or the battery runs low; every change is logged on stderr"},                                \
    {CLI_PATH(NULL, "--gov-policy", "FILE.json", &(O)->policy_file),                                                 \
     .help = "the policy from a JSON file (docs/governor.md#policy-file) instead of the --gov-* options below"},     \
    {CLI_CUSTOM(NULL, "--gov-temps", "W,H,C", (O)->temps, cli_parse_three), .count = &(O)->n_given,                 \
     .help = "temperatures (C) entering warm, hot, critical", .def = "60,70,80"},                                    \
    {CLI_DOUBLE(NULL, "--gov-hysteresis", "C", &(O)->hysteresis_c, 0, 50, CLI_CLOSED), .count = &(O)->n_given,      \
     .help = "a level is left this far below where it was entered", .def = "3"},                                    \
    {CLI_CUSTOM(NULL, "--gov-tok-s", "W,H,C", (O)->tok_s, cli_parse_three), .count = &(O)->n_given,                 \
     .help = "tokens per second at most at warm, hot, critical (0: no cap)", .def = "0,4,4"},                        \
    {CLI_DOUBLE(NULL, "--gov-battery", "PCT", &(O)->battery_pct, 0, 100, CLI_CLOSED), .count = &(O)->n_given,       \
     .help = "below this battery percentage and not charging: at least warm (0: off)", .def = "20"},                \
    {CLI_ENUM(NULL, "--gov-unknown", "LEVEL", &(O)->unknown_level, cli_gov_levels), .count = &(O)->n_given,         \
     .help = "level while the temperature is unknown (no readable thermal zone)", .def = "nominal"},                \
    {CLI_PATH(NULL, "--light-model", "FILE.gguf", &(O)->light_model), .count = &(O)->n_given,                       \
     .help = "the lighter model hot and critical switch to, at the next request"},                                   \
    {CLI_PATH(NULL, "--sysfs-root", "DIR", &(O)->sysfs_root), .count = &(O)->n_given,                               \
     .help = "read sensors under DIR instead of /sys (also $EDGELLM_SYSFS_ROOT)"},                                   \
    {CLI_PATH(NULL, "--sim-device", "DIR", &(O)->sim_dir),                                                           \
     .help = "simulate a device in DIR: a thermal zone heated by this process's CPU time (trip 70 C), whose "         \
             "throttling slows generation; sensors are read there"},                                                \
    {CLI_DOUBLE(NULL, "--sim-tau", "S", &(O)->sim_tau_s, 0, 1e6, CLI_OPEN_MIN), .show_default = 1,                  \
     .help = "the simulated device's thermal time constant, seconds"},                                               \
    {CLI_DOUBLE(NULL, "--sim-k", "C", &(O)->sim_k, 0, 1e3, CLI_OPEN_MIN), .show_default = 1,                        \
     .help = "the simulated device's steady-state rise per busy CPU, C (ambient 30 C)"},                           \
    {CLI_ENUM(NULL, "--sim-load", "cpu|declared", &(O)->sim_load, cli_sim_loads),                                   \
     .help = "what heats the simulated device: this process's CPU time, or the threads it computes on while it "   \
             "computes (declared: a device running the workload alone, for machines shared with other work)",      \
     .def = "cpu"}

/* Start the simulated device (when asked) and the governor (when enabled; app_threads
 * scales the default actions). *g and *d stay NULL when not asked. Prints the problem
 * and returns 1 on failure, else 0. */
int cli_gov_start(const char *cmd, const cli_gov_opts *o, int app_threads, edgellm_governor **g, edgellm_simdev **d);
void cli_gov_stop(edgellm_governor *g, edgellm_simdev *d);
#endif
