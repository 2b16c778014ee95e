/* placeholder: filled in by its module */
typedef int spsim_placeholder_units;
