"""Landing sealed checkpoints into the lake: the spark-submit spec of the landing job, running
it on a Spark Connect server instead, and a pipeline's landings from plan to commit
(``PipelineLanding``)."""

from pipeline_core.landing._connect import (
    SPARK_CONNECT_CONN_TYPE,
    SPARK_CONNECT_URL_ENV,
    JobSubmitter,
    SparkConnectSubmitter,
    spark_connect_command,
)
from pipeline_core.landing._jar import JarBuildError, java_functions_jar
from pipeline_core.landing._pipeline_landing import LOCAL_MASTER, LandingProgress, PipelineLanding
from pipeline_core.landing._spec import (
    LANDING_APPLICATION,
    METASTORE_URL_ENV,
    LandingInput,
    SparkJobSpec,
    landing_job_spec,
    spark_jobs_archive,
    spark_submit_binary,
)
from pipeline_core.landing._submit import (
    METASTORE_URL_FILE_ENV,
    SUBMIT_ID_ENV,
    SparkSubmitJob,
    SubmitTarget,
    masked_arguments,
    private_file,
    spark_submit_command,
)
from pipeline_core.landing._submitters import SubmitSettings, landing_submitter

__all__ = [
    "LANDING_APPLICATION",
    "LOCAL_MASTER",
    "METASTORE_URL_ENV",
    "METASTORE_URL_FILE_ENV",
    "SPARK_CONNECT_CONN_TYPE",
    "SPARK_CONNECT_URL_ENV",
    "SUBMIT_ID_ENV",
    "JarBuildError",
    "JobSubmitter",
    "LandingInput",
    "LandingProgress",
    "PipelineLanding",
    "SparkConnectSubmitter",
    "SparkJobSpec",
    "SparkSubmitJob",
    "SubmitSettings",
    "SubmitTarget",
    "java_functions_jar",
    "landing_job_spec",
    "landing_submitter",
    "masked_arguments",
    "private_file",
    "spark_connect_command",
    "spark_jobs_archive",
    "spark_submit_binary",
    "spark_submit_command",
]
