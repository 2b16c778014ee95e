/* The MPI distribution of sweeps (plan_dist over MPI_COMM_WORLD). Built into the spsim
 * executable when OpenMPI is found (SPSIM_HAVE_MPI); the plan library itself never
 * links MPI. */
#ifndef SPSIM_PLAN_DIST_MPI_H
#define SPSIM_PLAN_DIST_MPI_H

#include "plan/plan.h"

/* True when a launcher (mpirun, srun) started this process as one of several ranks. */
bool plan_dist_mpi_launched(void);
/* MPI_Init and the plan_dist callbacks. */
bool plan_dist_mpi_open(plan_dist *d, config_error *err);
/* MPI_Finalize. */
void plan_dist_mpi_close(plan_dist *d);

#endif
